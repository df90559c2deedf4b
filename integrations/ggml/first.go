package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import (
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/plan"
)

// The first plan: see the package documentation, "The first plan".

// FirstPlan plans graph with the first plan alone (see the package
// documentation, "The first plan"), checking it when Options.Check asks,
// and returns it: Size, Planning and FirstPlan (the same: the scan of the
// graph and the pass, the check excluded) are set, Trace and Result are
// empty (OnePass). It touches neither the graph, the cache nor the buffer.
func (a *Allocator) FirstPlan(graph unsafe.Pointer) (*Plan, error) {
	if graph == nil {
		return nil, fmt.Errorf("%w: nil graph", ErrGraph)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return nil, errFreed
	}
	start := time.Now()
	if err := a.sc.scan(graph); err != nil {
		return nil, err
	}
	read := time.Since(start)
	e, err := a.firstPlan()
	if err != nil {
		return nil, err
	}
	e.plan.FirstPlan += read
	e.plan.Planning += read
	return e.plan, nil
}

// firstPass places the scanned graph in one pass (sa_first_plan) and
// returns its cache entry, not inserted and not checked.
func (a *Allocator) firstPass() (*entry, error) {
	start := time.Now()
	e := &entry{place: make([]C.sa_place, int(a.sc.s.n_recs))}
	inplace := C.int32_t(1)
	if a.opts.NoInPlace {
		inplace = 0
	}
	h := int64(C.sa_first_plan(a.sc.s, placePtr(e.place), C.int64_t(a.align), inplace))
	switch h {
	case -1:
		return nil, fmt.Errorf("%w: no memory for the first plan", ErrGraph)
	case -2:
		return nil, fmt.Errorf("%w: a view has no view_src", ErrGraph)
	}
	e.structure, e.dims, e.pairs = a.sc.structure(), a.sc.dims(), a.pairs(e.place)
	d := time.Since(start)
	e.plan = &Plan{Size: h, OnePass: true, Planning: d, FirstPlan: d}
	return e, nil
}

// firstPlan is firstPass checked as Options.Check (or the invariants tag)
// asks.
func (a *Allocator) firstPlan() (*entry, error) {
	e, err := a.firstPass()
	if err != nil {
		return nil, err
	}
	if a.opts.Check || invariants.Enabled {
		if err := a.checkPlacement(e.place, e.plan.Size); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// checkPlacement runs check.Plan on the scanned graph's trace with the own
// tensors at the offsets place gives (no relaid tensor): an unsafe
// placement is an error matching plan.ErrConflict.
func (a *Allocator) checkPlacement(place []C.sa_place, size int64) error {
	ts, _ := a.sc.tensors()
	t, err := buildTrace(ts, "first-plan", a.align, a.rule)
	if err != nil {
		return err
	}
	p := &trace.Plan{Trace: t.Name, Size: size, Offsets: make(map[string]int64, len(ts))}
	for i := range ts {
		x := &ts[i]
		if x.kind == kindOwn && !x.isView() {
			pl := &place[x.rec]
			if pl.relaid != 0 || pl.offset < 0 {
				return fmt.Errorf("%w: the first plan has no offset for %q", ErrAlloc, x.name)
			}
			p.Offsets[x.name] = int64(pl.offset)
		}
	}
	prog, err := t.Resolve()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrGraph, err)
	}
	rep, err := check.Plan(prog, p)
	if err != nil {
		return fmt.Errorf("ggml: checking the first plan: %w", err)
	}
	if !rep.Safe {
		return fmt.Errorf("ggml: the first plan is unsafe: %s: %w", rep.Violations[0].String(), plan.ErrConflict)
	}
	return nil
}

// checkFirstMutated is the tests' hold on the first plan's check: it makes
// graph's first plan (firstPass, unchecked), lets mutate change its offsets
// (one per scan record, -1 where it places nothing), checks the result as
// Options.Check does, and reports whether markPartial finds a slot the plan
// shares while part of its tensor is live (it never should: the first
// plan's lifetimes are whole).
func (a *Allocator) checkFirstMutated(graph unsafe.Pointer, mutate func(offsets []int64)) (partial bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.sc.scan(graph); err != nil {
		return false, err
	}
	e, err := a.firstPass()
	if err != nil {
		return false, err
	}
	offs := make([]int64, len(e.place))
	for i := range e.place {
		offs[i] = int64(e.place[i].offset)
	}
	mutate(offs)
	for i := range e.place {
		e.place[i].offset = C.int64_t(offs[i])
	}
	ts, _ := a.sc.tensors()
	markPartial(ts, e.place)
	for i := range e.place {
		partial = partial || e.place[i].partial != 0
	}
	return partial, a.checkPlacement(e.place, e.plan.Size)
}

// pairs returns sa_pairs of the scanned graph placed by place, in a slice
// of its own (nil for none), listed once into the Allocator's scratch.
func (a *Allocator) pairs(place []C.sa_place) []int32 {
	// each node lists each source at most once
	most := 3 * int(a.sc.s.n_node_recs) * maxSrc
	if cap(a.pairBuf) < most {
		a.pairBuf = make([]int32, most)
	}
	n := int(C.sa_pairs(a.sc.s, placePtr(place), pairsPtr(a.pairBuf[:most])))
	if n == 0 {
		return nil
	}
	return slices.Clone(a.pairBuf[:3*n])
}
