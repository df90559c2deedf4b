package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/plan"
)

// Strided in-place placement. The planner may lay an op's output B over the
// bytes of a strided input that dies at the op (the gate half of a fused
// gate/up product): a trace.Placement instead of an offset. In ggml terms B
// keeps its ne, but its data points into the host tensor's bytes and its nb
// become the footprint's strides; every view of B (reshape, permute, view)
// gets strides and a view offset re-expressed over the footprint
// (trace.Relayout). ggml's kernels do not all accept such layouts: some
// assert contiguity (and abort the process), some assume it silently, and
// matrix multiplication takes another path, with other rounding, when its
// second operand stops being contiguous on some builds. So a relaid B is
// kept only when its writer and every reader are kernels verified on the
// layouts they get; otherwise B's op runs out of place and the graph is
// planned again. Verified, each by a graph computed bit-exact against
// ggml_gallocr and per-tensor memory with the relaid plan taken:
//
//	writers: UNARY (SiLU, GELU), MUL, ADD, RMS_NORM, ROPE  (TestRelayoutKernels)
//	readers: MUL_MAT (second operand), CPY, CONT, UNARY (SiLU, GELU), MUL,
//	         ADD, ROPE, RMS_NORM, NORM                       (TestRelayoutKernels)
//	         FLASH_ATTN_EXT (q)                              (TestAllocGraphBitExact)
//
// Every relaid layout has dense rows (nb[0] the element size); SiLU and
// GELU also need rows at a uniform stride, and MUL_MAT a second operand
// whose contiguity is unchanged unless llamafile's sgemm could not have
// taken it anyway.

// layoutFix is the new strides of a relaid tensor or of a view of one, and
// the data offset: for B the arena offset of its first element, for a view
// its view_offs from B.
type layoutFix struct {
	nb     [4]int64
	offset int64
}

// ggml ops and unary kinds the checks name.
var (
	opUnary     = int32(C.GGML_OP_UNARY)
	opMul       = int32(C.GGML_OP_MUL)
	opAdd       = int32(C.GGML_OP_ADD)
	opRope      = int32(C.GGML_OP_ROPE)
	opRMSNorm   = int32(C.GGML_OP_RMS_NORM)
	opNorm      = int32(C.GGML_OP_NORM)
	opMulMat    = int32(C.GGML_OP_MUL_MAT)
	opCpy       = int32(C.GGML_OP_CPY)
	opCont      = int32(C.GGML_OP_CONT)
	opFlashAttn = int32(C.GGML_OP_FLASH_ATTN_EXT)
	unarySiLU   = int32(C.GGML_UNARY_OP_SILU)
	unaryGELU   = int32(C.GGML_UNARY_OP_GELU)
	typeF32     = int32(C.GGML_TYPE_F32)
	typeF16     = int32(C.GGML_TYPE_F16)
)

// rowsDense reports whether elements of a row are adjacent: nb[0] is the
// type's size (and the type is not blocked).
func rowsDense(typ int32, nb *[4]int64) bool {
	return typeBlck[typ] == 1 && nb[0] == typeSize[typ]
}

// rowsUniform reports whether row r (over dims 1..3 flattened) starts at
// r*nb[1], as the SiLU and GELU kernels index rows.
func rowsUniform(ne, nb *[4]int64) bool {
	want := nb[1] * ne[1]
	for k := 2; k < 4; k++ {
		if ne[k] > 1 && nb[k] != want {
			return false
		}
		want *= ne[k]
	}
	return true
}

// contiguous is ggml_is_contiguous.
func contiguous(typ int32, ne, nb *[4]int64) bool {
	next := typeSize[typ]
	if ne[0] != typeBlck[typ] && nb[0] != next {
		return false
	}
	next *= ne[0] / typeBlck[typ]
	for k := 1; k < 4; k++ {
		if ne[k] != 1 {
			if nb[k] != next {
				return false
			}
			next *= ne[k]
		}
	}
	return true
}

// writerAccepts reports whether op x's kernel, verified by a test, computes
// correctly into x laid out with strides nb over a same-layout input.
func writerAccepts(x *tensor, nb *[4]int64) bool {
	if !rowsDense(x.typ, nb) {
		return false
	}
	switch x.op {
	case opUnary:
		return (x.sub == unarySiLU || x.sub == unaryGELU) && rowsUniform(&x.ne, nb)
	case opMul, opAdd, opRope, opRMSNorm:
		return true
	}
	return false
}

// readerAccepts reports whether op x's kernel, verified by a test, reads
// its source j (y, laid out with strides nb instead of before) correctly
// and through the same code path as before, so with the same rounding.
func readerAccepts(ts []tensor, x *tensor, j int, y *tensor, before, nb *[4]int64) bool {
	switch x.op {
	case opUnary:
		return j == 0 && (x.sub == unarySiLU || x.sub == unaryGELU) && rowsDense(y.typ, nb) && rowsUniform(&y.ne, nb)
	case opMul, opAdd:
		return j <= 1 && rowsDense(y.typ, nb)
	case opRope, opRMSNorm, opNorm, opFlashAttn:
		return j == 0 && rowsDense(y.typ, nb)
	case opCpy, opCont:
		return j == 0 && typeBlck[y.typ] == 1
	case opMulMat:
		if j != 1 || !rowsDense(y.typ, nb) || x.src[0] < 0 {
			return false
		}
		w := &ts[x.src[0]]
		if w.extra { // repacked weights: another kernel
			return false
		}
		if contiguous(y.typ, &y.ne, before) == contiguous(y.typ, &y.ne, nb) {
			return true
		}
		// A contiguous second operand is first offered to llamafile's sgemm
		// as f32; v0.17.4's sgemm takes f32 × f32 everywhere and f16 × f32
		// on ARM NEON, so only then does losing contiguity change the path.
		return w.typ != typeF32 && (w.typ != typeF16 || runtime.GOARCH != "arm64")
	}
	return false
}

// nbOf returns ggml strides (innermost first) for a layout of a tensor with
// ne: the layout's strides reversed, and for dimensions of size 1 the
// stride a fresh tensor would have.
func nbOf(l strided.Layout, ne *[4]int64, typ int32) ([4]int64, bool) {
	var nb [4]int64
	if len(l.Strides) != 4 {
		return nb, false
	}
	for k := range 4 {
		nb[k] = l.Strides[3-k]
	}
	if ne[0] == 1 {
		nb[0] = typeSize[typ]
	}
	for k := 1; k < 4; k++ {
		if ne[k] == 1 {
			nb[k] = nb[k-1] * ne[k-1]
			if k == 1 {
				nb[k] = nb[0] * ne[0] / typeBlck[typ]
			}
		}
	}
	return nb, true
}

// relayout computes the strides of every relaid tensor of res and of its
// views, and checks them against the kernels that write and read them. It
// returns the fixes by walk position and the ops whose outputs cannot be
// relaid (to run out of place).
func relayout(ts []tensor, byName map[string]int32, prog *trace.Program, res plan.Result) (map[int32]layoutFix, []string) {
	if len(res.Relaid) == 0 {
		return nil, nil
	}
	fix := map[int32]layoutFix{}
	var bad []string
	// Each tensor's views and readers, as runs of two arrays indexed by
	// walk position (counted, then filled).
	n := len(ts)
	viewAt, readAt := make([]int32, n+1), make([]int32, n+1)
	for i := range ts {
		x := &ts[i]
		if x.viewSrc >= 0 {
			viewAt[x.viewSrc+1]++
		}
		if x.isOp() {
			for _, s := range x.src {
				if s >= 0 {
					readAt[s+1]++
				}
			}
		}
	}
	for i := range n {
		viewAt[i+1] += viewAt[i]
		readAt[i+1] += readAt[i]
	}
	views, reads := make([]int32, viewAt[n]), make([][2]int32, readAt[n])
	vFill, rFill := slices.Clone(viewAt[:n]), slices.Clone(readAt[:n])
	for i := range ts {
		x := &ts[i]
		if x.viewSrc >= 0 {
			views[vFill[x.viewSrc]] = int32(i)
			vFill[x.viewSrc]++
		}
		if x.isOp() {
			for j, s := range x.src {
				if s >= 0 {
					reads[rFill[s]] = [2]int32{int32(i), int32(j)}
					rFill[s]++
				}
			}
		}
	}
	readers := func(y int32) [][2]int32 { return reads[readAt[y]:readAt[y+1]] }
	var fixes []fixAt
	for _, name := range res.Relaid {
		b, ok := byName[name]
		if !ok {
			bad = append(bad, name)
			continue
		}
		fixes, ok = relayoutOne(fixes[:0], ts, b, views[viewAt[b]:viewAt[b+1]], readers, prog, res)
		if !ok {
			bad = append(bad, name)
			continue
		}
		for _, f := range fixes {
			fix[f.at] = f.fix
		}
	}
	return fix, bad
}

// fixAt is the layout fix of the tensor at walk position at.
type fixAt struct {
	at  int32
	fix layoutFix
}

// relayoutOne appends to out the fixes of relaid tensor b and its views,
// and reports whether every kernel that writes or reads them accepts them.
func relayoutOne(out []fixAt, ts []tensor, b int32, views []int32, readers func(y int32) [][2]int32, prog *trace.Program,
	res plan.Result) ([]fixAt, bool) {
	x := &ts[b]
	if x.input || x.output || !x.isOp() {
		return nil, false
	}
	pl := res.Plan.Placements[x.name]
	hostOff, ok := res.Plan.Offsets[pl.Of]
	if !ok {
		return nil, false
	}
	ref, ok := prog.Lookup(x.name)
	if !ok || ref.View >= 0 {
		return nil, false
	}
	nat := prog.Buffers[ref.Buffer].Layout
	target := pl.Layout()
	if !sameSqueezed(target.Shape, nat.Shape) {
		var err error
		if target, err = target.Reshape(nat.Shape...); err != nil {
			return nil, false
		}
	}
	own, ok := trace.Relayout(nat, nat, target)
	if !ok {
		return nil, false
	}
	nb, ok := nbOf(own, &x.ne, x.typ)
	if !ok || !writerAccepts(x, &nb) {
		return nil, false
	}
	out = append(out, fixAt{b, layoutFix{nb: nb, offset: hostOff + own.Offset}})
	check := func(y int32, ynb *[4]int64) bool {
		for _, rd := range readers(y) {
			if !readerAccepts(ts, &ts[rd[0]], int(rd[1]), &ts[y], &ts[y].nb, ynb) {
				return false
			}
		}
		return true
	}
	if !check(b, &nb) {
		return nil, false
	}
	for _, v := range views {
		y := &ts[v]
		if y.output || y.input {
			return nil, false
		}
		shape, strides, elem, err := layout(y)
		if err != nil {
			return nil, false
		}
		vl := strided.Layout{Offset: y.viewOffs, Shape: shape, Strides: strides, Elem: elem}
		rl, ok := trace.Relayout(vl, nat, target)
		if !ok || rl.Offset < own.Offset {
			return nil, false
		}
		vnb, ok := nbOf(rl, &y.ne, y.typ)
		if !ok || !check(v, &vnb) {
			return nil, false
		}
		out = append(out, fixAt{v, layoutFix{nb: vnb, offset: rl.Offset - own.Offset}})
	}
	return out, true
}

// sameSqueezed reports whether shapes a and b are equal once their
// dimensions of size 1 are dropped (as Layout.Squeeze drops them).
func sameSqueezed(a, b []int64) bool {
	i, j := 0, 0
	for {
		for i < len(a) && a[i] == 1 {
			i++
		}
		for j < len(b) && b[j] == 1 {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i] != b[j] {
			return false
		}
		i++
		j++
	}
}

// outOfPlace marks the ops writing the named tensors not in place in t.
func outOfPlace(t *trace.Trace, names []string) error {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := 0
	for i := range t.Steps {
		s := &t.Steps[i]
		if s.Kind == trace.KindOp && want[s.Name] && s.InPlace {
			s.InPlace = false
			found++
		}
	}
	if found == 0 {
		return fmt.Errorf("%w: no in-place op writes %v", ErrAlloc, names)
	}
	return nil
}
