package ggml

/*
#include "sa_ggml.h"

static const char * sa_glu_name(int op) { return ggml_glu_op_name((enum ggml_glu_op) op); }
static int sa_glu_count(void) { return GGML_GLU_OP_COUNT; }
static const char * sa_version(void) { return ggml_version(); }
*/
import "C"

import (
	"slices"

	"github.com/subarena/subarena/integrations/ggml/kernels"
	"github.com/subarena/subarena/trace/ggmltrace"
)

// The in-place rule: which ops may write their output over the bytes of an
// input that dies at them (trace.Step.InPlace; the planner picks the input
// and checks that it dies). Two sources, and nothing else:
//
//   - ggml's own rule, for every buffer type: ggml_op_can_inplace lists the
//     op, and every input the planner could pair with the output (an own
//     tensor of as many elements of the same size) has the output's type
//     and ne, as ggml-alloc asks (ggml_are_same_layout). An op failing the
//     second test runs out of place.
//   - the kernels verified beyond ggml's list (package kernels: GLU's
//     two-source forms, NORM), on ggml's CPU buffer type only and only with
//     the ggml version they were verified on: the op, its variant, type and
//     layout match an entry.
//
// Another buffer type (a GPU's, or the host buffer a GPU backend lends the
// CPU) gets ggml's rule only, until its kernels are verified the same way.

// inplaceRule says which rules an Allocator's trace uses.
type inplaceRule int

const (
	// ggmlRule is ggml_op_can_inplace ∧ same type and ne: what ggml-alloc
	// does, and what ggmltrace.Import maps.
	ggmlRule inplaceRule = iota
	// cpuRule adds the verified CPU kernels (package kernels) when the
	// linked ggml is the version they were verified on.
	cpuRule
)

// verifiedEntry is a kernels.InPlace entry resolved against the linked
// ggml's op, variant and type numbers.
type verifiedEntry struct {
	entry  *kernels.Entry
	op     int32
	sub    int32 // -1: the op has no variant
	types  []int32
	layout kernels.Layout
}

// verified holds the resolved kernels.InPlace, empty when the linked ggml
// is not kernels.GGMLVersion (readTables fills it).
var verified []verifiedEntry

// readVerified resolves kernels.InPlace against the linked ggml.
func readVerified() { verified = resolveVerified(C.GoString(C.sa_version())) }

// resolveVerified resolves kernels.InPlace against the linked ggml's
// names, if version is kernels.GGMLVersion (else none); an entry naming an
// op, variant or type the ggml lacks is left out.
func resolveVerified(version string) []verifiedEntry {
	if version != kernels.GGMLVersion {
		return nil
	}
	var out []verifiedEntry
	glu := make([]string, int(C.sa_glu_count()))
	for i := range glu {
		if p := C.sa_glu_name(C.int(i)); p != nil {
			glu[i] = C.GoString(p)
		}
	}
	for k := range kernels.InPlace {
		e := &kernels.InPlace[k]
		v := verifiedEntry{entry: e, op: int32(slices.Index(opNames, e.Op)), sub: -1, layout: e.Layout}
		if v.op < 0 {
			continue
		}
		if e.Variant != "" {
			if v.op != int32(C.GGML_OP_GLU) {
				continue // variants are read for GLU only
			}
			if v.sub = int32(slices.Index(glu, e.Variant)); v.sub < 0 {
				continue
			}
		}
		for _, tn := range e.Types {
			if t := slices.Index(typeNames, tn); t >= 0 {
				v.types = append(v.types, int32(t))
			}
		}
		if len(v.types) > 0 {
			out = append(out, v)
		}
	}
	return out
}

// inplaceOK reports whether node i's op may write its output over a dying
// input under rule.
func inplaceOK(ts []tensor, base []int32, i int, rule inplaceRule) bool {
	return ggmlInplace(ts, base, i) || (rule == cpuRule && verifiedInplace(ts, i))
}

// ggmlInplace is ggml's rule, ggmltrace.CanInplace (the rule the importer
// maps ggml-alloc-trace/1 documents with), in its two halves:
// ggml_op_can_inplace lists the op (opInplace, ggmltrace.InPlaceOp per
// op), and every input of the allocator's that the planner could pair with
// the output (as many elements of the same size) has the output's type and
// ne (ggmltrace.SameLayoutSources).
func ggmlInplace(ts []tensor, base []int32, i int) bool {
	x := &ts[i]
	if int(x.op) >= len(opInplace) || !opInplace[x.op] {
		return false
	}
	var buf [maxSrc]ggmltrace.Operand
	srcs := buf[:0]
	for _, s := range x.src {
		if s >= 0 {
			srcs = append(srcs, operand(&ts[s], ts[base[s]].kind == kindOwn))
		}
	}
	return ggmltrace.SameLayoutSources(operand(x, true), srcs)
}

// operand is x as ggml's in-place rule sees it.
func operand(x *tensor, own bool) ggmltrace.Operand {
	return ggmltrace.Operand{Type: typeNames[x.typ], TypeSize: typeSize[x.typ], Ne: x.ne, Own: own}
}

// verifiedInplace reports whether node i matches an entry of verified.
func verifiedInplace(ts []tensor, i int) bool {
	x := &ts[i]
	for k := range verified {
		v := &verified[k]
		if v.op != x.op || (v.sub >= 0 && v.sub != x.sub) || !slices.Contains(v.types, x.typ) {
			continue
		}
		if layoutMatches(ts, x, v.layout) {
			return true
		}
	}
	return false
}

// layoutMatches reports whether node x and its sources have layout l.
func layoutMatches(ts []tensor, x *tensor, l kernels.Layout) bool {
	want := 0
	switch l {
	case kernels.TwoSources:
		want = 2
	case kernels.OneSource:
		want = 1
	default:
		return false
	}
	if !contiguous(x.typ, &x.ne, &x.nb) {
		return false
	}
	n := 0
	for _, s := range x.src {
		if s < 0 {
			continue
		}
		y := &ts[s]
		if y.typ != x.typ || y.ne != x.ne || !contiguous(y.typ, &y.ne, &y.nb) {
			return false
		}
		n++
	}
	return n == want && len(x.src) == want
}

func nelements(ne *[4]int64) int64 { return ne[0] * ne[1] * ne[2] * ne[3] }
