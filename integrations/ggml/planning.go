package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import (
	"cmp"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/plan"
)

func keyPtr(k []uint64) *C.uint64_t {
	if len(k) == 0 {
		return nil
	}
	return (*C.uint64_t)(unsafe.Pointer(&k[0]))
}

func dimsPtr(d []int64) *C.int64_t {
	if len(d) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&d[0]))
}

func pairsPtr(p []int32) *C.int32_t {
	if len(p) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&p[0]))
}

func placePtr(p []C.sa_place) *C.sa_place {
	if len(p) == 0 {
		return nil
	}
	return &p[0]
}

// planScanned plans the graph in the scanner and caches the result;
// search tells whether Options.Budget may be spent on it (else it is
// planned greedily). The planner's plan is compared with the first plan
// (first, or made here when nil), and the lower kept.
func (a *Allocator) planScanned(search bool, first *entry) (*entry, error) {
	if first == nil {
		var err error
		if first, err = a.firstPlan(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	ts, pos := a.sc.tensors()
	name := a.opts.Name
	if name == "" {
		name = "ggml-graph"
	}
	t, err := buildTrace(ts, name, a.align, a.rule)
	if err != nil {
		return nil, err
	}
	read := time.Since(start)
	p, place, nRelaid, err := a.planTrace(ts, pos, t, search)
	if err != nil {
		return nil, err
	}
	p.Read = read
	p.Planning = time.Since(start) - read
	p.FirstPlan = first.plan.FirstPlan
	a.stats.Plans++
	if first.plan.Size < p.Size {
		// the one-pass greedy is lower: its placement, the planner's
		// answer beside it
		first.plan.Trace, first.plan.Result, first.plan.Read, first.plan.Planning = t, p.Result, p.Read, p.Planning
		a.insert(first)
		return first, nil
	}
	e := &entry{structure: first.structure, dims: first.dims, place: place, nRelaid: nRelaid, plan: p}
	e.pairs = a.pairs(place)
	a.insert(e)
	return e, nil
}

// remove takes e out of the cache.
func (a *Allocator) remove(e *entry) {
	es := slices.DeleteFunc(a.cache[e.hash], func(c *entry) bool { return c == e })
	if len(es) == 0 {
		delete(a.cache, e.hash)
	} else {
		a.cache[e.hash] = es
	}
	a.entries--
	if a.last == e {
		a.setLast(nil)
	}
}

func (a *Allocator) insert(e *entry) {
	if a.opts.CacheSize < 0 {
		return
	}
	if a.entries >= a.opts.CacheSize {
		var old *entry
		for _, es := range a.cache {
			for _, c := range es {
				if old == nil || c.used < old.used {
					old = c
				}
			}
		}
		a.remove(old)
	}
	a.clock++
	e.used = a.clock
	a.cache[e.hash] = append(a.cache[e.hash], e)
	a.entries++
}

// planTrace plans t and turns the plan into placement instructions, one per
// scan record. A plan that relays a tensor onto layouts its kernels are not
// verified on is planned again with that tensor's op out of place.
func (a *Allocator) planTrace(ts []tensor, pos []int32, t *trace.Trace, search bool) (*Plan, []C.sa_place, int32, error) {
	budget := a.opts.Budget
	if !search {
		budget = 0
	}
	opts := plan.Options{Budget: budget, NoInPlace: a.opts.NoInPlace, NoRelayout: a.opts.NoRelayout,
		Check: a.opts.Check, Scratch: &a.scratch}
	var byName map[string]int32 // made once a plan relays a tensor
	p := &Plan{Trace: t}
	var res plan.Result
	var fix map[int32]layoutFix
	for {
		prog, err := t.ResolveReusing(a.prog)
		a.prog = prog // nil after an error: the next plan starts afresh
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: %w", ErrGraph, err)
		}
		if res, err = plan.PlanProgram(prog, opts); err != nil {
			return nil, nil, 0, fmt.Errorf("ggml: planning %q: %w", t.Name, err)
		}
		if len(res.Relaid) > 0 && byName == nil {
			byName = make(map[string]int32, len(ts))
			for i := range ts {
				byName[ts[i].name] = int32(i)
			}
		}
		var bad []string
		fix, bad = relayout(ts, byName, prog, res)
		if len(bad) == 0 {
			break
		}
		if err := outOfPlace(t, bad); err != nil {
			return nil, nil, 0, err
		}
		p.OutOfPlace = append(p.OutOfPlace, bad...)
	}
	p.Result, p.Size, p.LowerBound, p.Relaid = res, res.Plan.Size, res.LowerBound, res.Relaid
	place := make([]C.sa_place, len(pos))
	nRelaid := int32(0)
	for r, w := range pos {
		x := &ts[w]
		pl := &place[r]
		pl.offset = -1
		f, relaid := fix[w]
		switch {
		case x.kind == kindOwn && relaid:
			pl.offset = C.int64_t(f.offset)
		case x.kind == kindOwn:
			off, ok := res.Plan.Offsets[x.name]
			if !ok {
				return nil, nil, 0, fmt.Errorf("%w: the plan has no offset for %q", ErrAlloc, x.name)
			}
			pl.offset = C.int64_t(off)
		case x.kind == kindViewOwn && relaid:
			pl.view_offs = C.int64_t(f.offset)
		}
		if relaid {
			pl.relaid = 1
			for k := range 4 {
				pl.nb[k] = C.int64_t(f.nb[k])
			}
			nRelaid++
		}
	}
	markPartial(ts, place)
	return p, place, nRelaid, nil
}

// markPartial sets the partial flag of every own tensor whose slot the plan
// shares with another own tensor while both are live, judged by whole
// lifetimes: from the op that writes a tensor (the graph's start for leaves
// and inputs) to the last op that reads it or a view of it (the end for
// outputs). Such a plan relies on bytes that die before the rest of their
// tensor, and a smaller graph keeps those bytes where they were only when
// its views are subsets of the planned ones (sa_fit). Two tensors that meet
// only at one op, one read last and the other written by it, are not
// partial: sa_pairs lists the op's sources for sa_fit to check.
func markPartial(ts []tensor, place []C.sa_place) {
	base, err := viewBases(ts)
	if err != nil {
		return
	}
	n := len(ts)
	lastUse, held, prelude := lastUses(ts, base)
	type life struct {
		rec        int32
		start, end int32
		op         bool // start is the op that writes it
		lo, hi     int64
	}
	lives := make([]life, 0, n)
	for i := range ts {
		x := &ts[i]
		if x.kind != kindOwn || x.isView() {
			continue
		}
		pl := &place[x.rec]
		if pl.offset < 0 {
			continue
		}
		l := life{rec: x.rec, start: int32(i), op: true, lo: int64(pl.offset)}
		if x.exec < 0 || x.input {
			l.start, l.op = 0, false
		}
		switch {
		case held[i]:
			l.end = int32(n)
		case lastUse[i] >= 0:
			l.end = lastUse[i]
		default:
			l.end = max(prelude, int32(i))
		}
		size := max(x.allocSize, x.nbytes, 1)
		if pl.relaid != 0 {
			var nb [4]int64
			for k := range 4 {
				nb[k] = int64(pl.nb[k])
			}
			size = max(size, nbytes(x.typ, &x.ne, &nb))
		}
		l.hi = l.lo + size
		lives = append(lives, l)
	}
	slices.SortStableFunc(lives, func(a, b life) int { return cmp.Compare(a.start, b.start) })
	active := make([]life, 0, 64)
	for _, t := range lives {
		k := 0
		for _, a := range active {
			if a.end >= t.start {
				active[k] = a
				k++
			}
		}
		active = active[:k]
		for _, a := range active {
			if a.hi <= t.lo || t.hi <= a.lo || (a.end == t.start && t.op) {
				continue
			}
			place[a.rec].partial = 1
			place[t.rec].partial = 1
		}
		active = append(active, t)
	}
}
