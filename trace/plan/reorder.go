package plan

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// ErrNotReordered reports a trace Reorder does not reorder: one with more
// than one engine, whose happens-before relation is not the op order.
var ErrNotReordered = errors.New("plan: trace not reordered")

// ReorderRule is the list-scheduling rule Reorder picks the next op with,
// among the ops whose every predecessor has run. Every rule counts a
// buffer live, whole, from the first op that uses it to the last (to the
// end when it is held), and breaks ties by the input order.
type ReorderRule uint8

// The rules. For a ready op, new is the bytes of the buffers it is the first
// to use and freed the bytes of the released buffers it is the last to use.
const (
	// ReorderNet runs the op with the least new − freed: the one that
	// grows the live bytes least, or shrinks them most.
	ReorderNet ReorderRule = iota
	// ReorderPeak runs the op that raises the running peak of live bytes
	// least (live + new while it runs), then by ReorderNet.
	ReorderPeak
	// ReorderFree runs the op that frees the most bytes, then the one with
	// the least new.
	ReorderFree
)

// ReorderRules are every ReorderRule, in the order PlanReordered tries
// them.
var ReorderRules = []ReorderRule{ReorderNet, ReorderPeak, ReorderFree}

// reorderNames holds the name of each ReorderRule, indexed by value.
var reorderNames = [...]string{ReorderNet: "net", ReorderPeak: "peak", ReorderFree: "free"}

// String returns the rule's name ("net", "peak", "free").
func (r ReorderRule) String() string {
	if int(r) < len(reorderNames) && reorderNames[r] != "" {
		return reorderNames[r]
	}
	return fmt.Sprintf("ReorderRule(%d)", uint8(r))
}

// Reordering is a trace with its ops in another order that respects every
// dependency of the input (see Reorder).
type Reordering struct {
	// Trace is the reordered trace: the input's steps, permuted.
	Trace *trace.Trace
	// Order lists the input's ops (indices into Program.Ops) in the order
	// Trace submits them.
	Order []int
	// Rule is the rule that chose Order.
	Rule ReorderRule
	// Peak is the most bytes live at once in Order under the rules'
	// whole-buffer model (Fixed: the same in the input order); the planner's
	// bound of Trace is what counts (Reordered.Best).
	Peak, Fixed int64
}

// Reorder returns p's trace with its ops permuted by list scheduling under
// rule, to lower the bytes live at once. It works on one-engine traces,
// whose happens-before relation is the op order, and returns an error
// matching ErrNotReordered for others.
//
// The new order keeps, for every two ops that use overlapping bytes of one
// buffer (or view of it) with at least one of them writing, the input's
// order of the two, and every op after the ops it waits on: the reordered
// trace computes what the input computes. The other steps follow their ops:
// an alloc comes right before the first op that uses its buffer, a view
// right before the first op that uses it or a view of it, a release or a
// discard right after the last op that uses the bytes it lets go, a sync
// right after its op. Externals, buffers no op uses (with their views,
// discards and release, in input order) and buffers whose bytes an op reads
// before any op writes them (filled by the host: live from their
// allocation point) are allocated first, in input order.
//
// Cost: O(U² + n·r) for U uses of one buffer and r ready ops at a time;
// the data dependencies are found pairwise per buffer, with the byte sets
// of the uses compared only when one of the two writes.
func Reorder(p *trace.Program, rule ReorderRule) (*Reordering, error) {
	if p == nil || p.Trace == nil {
		return nil, fmt.Errorf("nil program: %w", ErrInvalidTrace)
	}
	if n := len(p.Trace.Engines); n != 1 {
		return nil, fmt.Errorf("%w: %d engines: ops on different engines may run at once, so the op order is not the happens-before relation", ErrNotReordered, n)
	}
	if rule > ReorderFree {
		return nil, fmt.Errorf("reorder rule %d: %w", rule, ErrInvalidOptions)
	}
	p = p.Clone() // the footprint cache is filled here
	g := newDepGraph(p)
	order, peak := g.schedule(rule)
	fixed := g.peakOf(identity(len(p.Ops)))
	t, err := g.steps(order)
	if err != nil {
		return nil, err
	}
	return &Reordering{Trace: t, Order: order, Rule: rule, Peak: peak, Fixed: fixed}, nil
}

func identity(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

// OpDependencies returns, for each op of a one-engine program, the earlier
// ops it depends on: those it waits on, and those that use bytes it uses
// (of one buffer, overlapping) when at least one of the two writes them.
// Any order of the ops that keeps each op after these computes what the
// input order computes. Each list is sorted and has no duplicates.
func OpDependencies(p *trace.Program) [][]int {
	g := newDepGraph(p.Clone())
	out := make([][]int, len(p.Ops))
	for k := range p.Ops {
		for _, j := range g.pred[k] {
			out[k] = append(out[k], int(j))
		}
	}
	return out
}

// depGraph is a one-engine program's op dependencies and what the
// schedulers and the step emitter need to know of each buffer.
type depGraph struct {
	p    *trace.Program
	pred [][]int32 // sorted, distinct earlier ops each op depends on
	succ [][]int32
	// bufs[k] are the distinct buffers op k uses.
	bufs [][]int32
	// users[b] counts the distinct ops using buffer b.
	users []int32
	// early[b]: b is emitted before every op (external, host-filled, unused).
	early []bool
	// viewUsed[v]: some op uses view v or a view taken of it.
	viewUsed []bool
	// discardWaits[v] are the ops that must run before view v's discard;
	// releaseWaits[b] the ops before buffer b's release.
	discardWaits [][]int32
	releaseWaits [][]int32
	// children[v] are the views taken of view v; bufViews[b] of buffer b
	// directly or not, in step order.
	bufViews [][]int32
	syncs    [][]int32 // sync steps per op
}

type bufUse struct {
	op  int32
	ref trace.Ref
	acc trace.Access
}

func newDepGraph(p *trace.Program) *depGraph {
	nOps, nBufs := len(p.Ops), len(p.Buffers)
	g := &depGraph{p: p, pred: make([][]int32, nOps), succ: make([][]int32, nOps), bufs: make([][]int32, nOps),
		users: make([]int32, nBufs), early: make([]bool, nBufs), viewUsed: make([]bool, len(p.Views)),
		discardWaits: make([][]int32, len(p.Views)), releaseWaits: make([][]int32, nBufs),
		bufViews: make([][]int32, nBufs), syncs: make([][]int32, nOps)}
	for v := range p.Views {
		b := p.Views[v].Buffer
		g.bufViews[b] = append(g.bufViews[b], int32(v))
	}
	for _, s := range p.Syncs {
		g.syncs[s.Op] = append(g.syncs[s.Op], int32(s.Step))
	}
	uses := make([][]bufUse, nBufs)
	for k := range p.Ops {
		op := &p.Ops[k]
		for _, u := range op.Uses {
			b := u.Ref.Buffer
			uses[b] = append(uses[b], bufUse{op: int32(k), ref: u.Ref, acc: u.Access})
			if !slices.Contains(g.bufs[k], int32(b)) {
				g.bufs[k] = append(g.bufs[k], int32(b))
				g.users[b]++
				g.releaseWaits[b] = append(g.releaseWaits[b], int32(k))
			}
			for v := u.Ref.View; v >= 0; v = p.Views[v].Parent {
				g.viewUsed[v] = true
			}
		}
	}
	// Data dependencies, per buffer: every earlier use of overlapping bytes
	// when one of the two writes. stamp dedups an op's predecessors.
	stamp := make([]int32, nOps)
	for i := range stamp {
		stamp[i] = -1
	}
	for k := range p.Ops {
		for _, w := range p.Ops[k].Waits {
			if stamp[w] != int32(k) {
				stamp[w] = int32(k)
				g.pred[k] = append(g.pred[k], int32(w))
			}
		}
	}
	for b := range uses {
		us := uses[b]
		var writes []int32 // the uses of us that write, in order
		for i := range us {
			ui := &us[i]
			fi, _ := p.Footprint(ui.ref)
			// A write follows every earlier use of its bytes; a read, every
			// earlier write.
			earlier := len(writes)
			if ui.acc&trace.AccessWrite != 0 {
				earlier = i
				writes = append(writes, int32(i))
			}
			for e := range earlier {
				j := e
				if ui.acc&trace.AccessWrite == 0 {
					j = int(writes[e])
				}
				uj := &us[j]
				if uj.op == ui.op || stamp[uj.op] == ui.op {
					continue
				}
				if ui.ref == uj.ref {
					if fi.IsEmpty() {
						continue
					}
				} else if fj, _ := p.Footprint(uj.ref); !overlaps(&fi, &fj) {
					continue
				}
				stamp[uj.op] = ui.op
				g.pred[ui.op] = append(g.pred[ui.op], uj.op)
			}
		}
		// Host-filled: some byte read before any op wrote it (an inexact
		// read counts as reading every byte it may cover).
		if !p.Buffers[b].External && len(us) > 0 {
			var written ranges.Set
			for _, u := range us {
				f, exact := p.Footprint(u.ref)
				if u.acc&trace.AccessRead != 0 && !covered(&written, &f, exact) {
					g.early[b] = true
					break
				}
				if u.acc&trace.AccessWrite != 0 && exact {
					written.AddSet(&f)
				}
			}
		}
		if p.Buffers[b].External || len(us) == 0 {
			g.early[b] = true
		}
		// A discarded view waits for every op using bytes it covers, or a
		// view of it.
		for _, v := range g.bufViews[b] {
			if p.Views[v].Discard < 0 {
				continue
			}
			fv, _ := p.Footprint(trace.Ref{Buffer: b, View: int(v)})
			for _, u := range us {
				if stamp[u.op] == -2-v {
					continue
				}
				in := false
				for x := u.ref.View; x >= 0 && !in; x = p.Views[x].Parent {
					in = x == int(v)
				}
				if !in {
					f, _ := p.Footprint(u.ref)
					_, in = fv.OverlapsSet(&f)
				}
				if in {
					stamp[u.op] = -2 - v
					g.discardWaits[v] = append(g.discardWaits[v], u.op)
				}
			}
		}
	}
	for k := range g.pred {
		slices.Sort(g.pred[k])
		g.pred[k] = slices.Compact(g.pred[k])
		for _, j := range g.pred[k] {
			g.succ[j] = append(g.succ[j], int32(k))
		}
	}
	return g
}

// covered reports whether every byte of f is in w (never when f is inexact).
func covered(w, f *ranges.Set, exact bool) bool {
	if !exact {
		return false
	}
	for r := range f.All() {
		if !w.ContainsRange(r) {
			return false
		}
	}
	return true
}

// size is buffer b's bytes under the schedulers' model: 0 for externals.
func (g *depGraph) size(b int32) int64 {
	if g.p.Buffers[b].External {
		return 0
	}
	return g.p.Buffers[b].Size
}

// liveModel tracks the whole-buffer live bytes as ops run.
type liveModel struct {
	g         *depGraph
	left      []int32 // ops still to use each buffer
	live      []bool
	cur, peak int64
}

func (g *depGraph) newLiveModel() *liveModel {
	m := &liveModel{g: g, left: slices.Clone(g.users), live: make([]bool, len(g.users))}
	for b := range g.users {
		if g.early[b] && g.users[b] > 0 {
			m.live[b] = true
			m.cur += g.size(int32(b))
		}
	}
	m.peak = m.cur
	return m
}

// cost returns the bytes op k makes live and those it frees.
func (m *liveModel) cost(k int) (alloc, freed int64) {
	for _, b := range m.g.bufs[k] {
		if !m.live[b] {
			alloc += m.g.size(b)
		}
		if m.left[b] == 1 && m.g.p.Buffers[b].Release >= 0 {
			freed += m.g.size(b)
		}
	}
	return alloc, freed
}

func (m *liveModel) run(k int) {
	alloc, freed := m.cost(k)
	m.cur += alloc
	m.peak = max(m.peak, m.cur)
	m.cur -= freed
	for _, b := range m.g.bufs[k] {
		m.live[b] = true
		m.left[b]--
	}
}

func (g *depGraph) peakOf(order []int) int64 {
	m := g.newLiveModel()
	for _, k := range order {
		m.run(k)
	}
	return m.peak
}

// schedule runs the list scheduler under rule and returns the order and its
// peak under the whole-buffer model.
func (g *depGraph) schedule(rule ReorderRule) ([]int, int64) {
	n := len(g.p.Ops)
	indeg := make([]int32, n)
	var ready []int
	for k := range n {
		indeg[k] = int32(len(g.pred[k]))
		if indeg[k] == 0 {
			ready = append(ready, k)
		}
	}
	m := g.newLiveModel()
	order := make([]int, 0, n)
	type key struct{ a, b, c int64 }
	less := func(x, y key) bool {
		if x.a != y.a {
			return x.a < y.a
		}
		if x.b != y.b {
			return x.b < y.b
		}
		return x.c < y.c
	}
	for len(ready) > 0 {
		best, bestKey := -1, key{}
		for i, k := range ready {
			alloc, freed := m.cost(k)
			var kk key
			switch rule {
			case ReorderNet:
				kk = key{alloc - freed, int64(k), 0}
			case ReorderPeak:
				kk = key{max(m.peak, m.cur+alloc), alloc - freed, int64(k)}
			case ReorderFree:
				kk = key{-freed, alloc, int64(k)}
			}
			if best < 0 || less(kk, bestKey) {
				best, bestKey = i, kk
			}
		}
		k := ready[best]
		ready[best] = ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		m.run(k)
		order = append(order, k)
		for _, s := range g.succ[k] {
			if indeg[s]--; indeg[s] == 0 {
				ready = append(ready, int(s))
			}
		}
	}
	return order, m.peak
}

// steps lays out the trace's steps for the op order (see Reorder).
func (g *depGraph) steps(order []int) (*trace.Trace, error) {
	p := g.p
	in := p.Trace
	if len(order) != len(p.Ops) {
		return nil, fmt.Errorf("internal: reorder scheduled %d of %d ops (a dependency cycle)", len(order), len(p.Ops))
	}
	e := &emitter{g: g, out: make([]int, 0, len(in.Steps)), done: make([]bool, len(in.Steps)),
		discardLeft: make([]int32, len(p.Views)), releaseLeft: make([]int32, len(p.Buffers))}
	for v := range p.Views {
		e.discardLeft[v] += int32(len(g.discardWaits[v]))
		// A view goes after the views taken of it that go.
		if p.Views[v].Discard >= 0 {
			for x := p.Views[v].Parent; x >= 0; x = p.Views[x].Parent {
				e.discardLeft[x]++
			}
		}
	}
	for b := range p.Buffers {
		e.releaseLeft[b] = int32(len(g.releaseWaits[b]) + len(p.Buffers[b].Discards))
	}
	// Ops each release and discard waits for, inverted.
	e.opDiscards = make([][]int32, len(p.Ops))
	for v, ws := range g.discardWaits {
		for _, k := range ws {
			e.opDiscards[k] = append(e.opDiscards[k], int32(v))
		}
	}
	// First the externals and the buffers allocated early, in input order;
	// the steps of buffers no op uses go along in input order.
	for i, s := range in.Steps {
		switch s.Kind {
		case trace.KindAlloc, trace.KindExternal:
			b := p.StepIndex[i]
			if g.early[b] {
				e.alloc(b)
			}
		case trace.KindView:
			if b := p.Views[p.StepIndex[i]].Buffer; g.users[b] == 0 {
				e.emit(i)
			}
		case trace.KindRelease:
			b := p.StepIndex[i]
			if !releases(p, i) {
				b = p.Views[b].Buffer
			}
			if g.users[b] == 0 {
				e.emit(i)
			}
		}
	}
	for _, k := range order {
		op := &p.Ops[k]
		for _, u := range op.Uses {
			e.alloc(u.Ref.Buffer)
			e.view(u.Ref.View)
		}
		e.emit(op.Step)
		for _, s := range g.syncs[k] {
			e.emit(int(s))
		}
		var due []int
		for _, v := range e.opDiscards[k] {
			if e.discardLeft[v]--; e.discardLeft[v] == 0 {
				due = append(due, p.Views[v].Discard)
			}
		}
		for _, b := range g.bufs[k] {
			if e.releaseLeft[b]--; e.releaseLeft[b] == 0 && p.Buffers[b].Release >= 0 {
				due = append(due, p.Buffers[b].Release)
			}
		}
		e.letGo(due)
	}
	if len(e.out) != len(in.Steps) {
		return nil, fmt.Errorf("internal: reorder laid out %d of %d steps", len(e.out), len(in.Steps))
	}
	t := &trace.Trace{Name: in.Name, Granule: in.Granule, Engines: slices.Clone(in.Engines), Steps: make([]trace.Step, len(e.out))}
	for i, s := range e.out {
		t.Steps[i] = in.Steps[s]
	}
	return t, nil
}

// emitter appends the input's step indices in the reordered order.
type emitter struct {
	g           *depGraph
	out         []int
	done        []bool
	discardLeft []int32
	releaseLeft []int32
	opDiscards  [][]int32
}

func (e *emitter) emit(i int) {
	if !e.done[i] {
		e.done[i] = true
		e.out = append(e.out, i)
	}
}

// alloc emits buffer b's alloc step, then the views of it no op uses and the
// discards that wait for no op.
func (e *emitter) alloc(b int) {
	p := e.g.p
	buf := &p.Buffers[b]
	if e.done[buf.Step] {
		return
	}
	e.emit(buf.Step)
	var due []int
	for _, v := range e.g.bufViews[b] {
		if !e.g.viewUsed[v] {
			e.view(int(v))
		}
		if d := p.Views[v].Discard; d >= 0 && e.discardLeft[v] == 0 {
			due = append(due, d)
		}
	}
	e.letGo(due)
}

// view emits view v's step after its parent's (nothing for v < 0).
func (e *emitter) view(v int) {
	if v < 0 || e.done[e.g.p.Views[v].Step] {
		return
	}
	e.view(e.g.p.Views[v].Parent)
	e.emit(e.g.p.Views[v].Step)
}

// letGo emits the discards and releases in due (step indices), in input
// order, each discard's view (and the views of it) first, and each
// buffer's release once its discards are out.
func (e *emitter) letGo(due []int) {
	p := e.g.p
	slices.Sort(due)
	for len(due) > 0 {
		i := due[0]
		due = due[1:]
		if e.done[i] {
			continue
		}
		if releases(p, i) {
			e.emit(i)
			continue
		}
		v := p.StepIndex[i]
		// The views of v must be taken before v goes.
		for _, c := range e.g.bufViews[p.Views[v].Buffer] {
			for x := int(c); x >= 0; x = p.Views[x].Parent {
				if x == v {
					e.view(int(c))
					break
				}
			}
		}
		e.view(v)
		e.emit(i)
		for x := p.Views[v].Parent; x >= 0; x = p.Views[x].Parent {
			if e.discardLeft[x]--; e.discardLeft[x] == 0 && p.Views[x].Discard >= 0 {
				due = append(due, p.Views[x].Discard)
				slices.Sort(due)
			}
		}
		b := p.Views[v].Buffer
		if e.releaseLeft[b]--; e.releaseLeft[b] == 0 && p.Buffers[b].Release >= 0 {
			due = append(due, p.Buffers[b].Release)
			slices.Sort(due)
		}
	}
}

// releases reports whether release step i releases a buffer (not a view).
func releases(p *trace.Program, i int) bool {
	b := p.StepIndex[i]
	return b < len(p.Buffers) && p.Buffers[b].Release == i
}

// Reordered is PlanReordered's answer: the plan of the input order, the
// plan of its best reordering, and which of the two to use.
type Reordered struct {
	// Fixed is the plan of the input order, as PlanProgram makes it.
	Fixed Result
	// Best is the plan of the best reordering (the lowest bound, then
	// size), and Reordering the reordering it is for; both are nil when
	// no rule changed the order or the trace was not reordered (Skipped).
	Best       *Result
	Reordering *Reordering
	// Kept says Best is the plan to use: its bound and its size are both
	// at most Fixed's, and one is lower (see Chosen).
	Kept bool
	// Skipped says why no reordering was planned ("" when Best is set).
	Skipped string
	// OrderBound is, on a one-engine trace, the input's OrderBound: no plan
	// of any order of its ops is below it (0 when not computed).
	OrderBound int64
	// Elapsed is the time of the whole: every order planned, the order
	// bound included.
	Elapsed time.Duration
}

// Chosen returns the plan to use: Best when Kept, else Fixed, with Elapsed
// the whole's.
func (r *Reordered) Chosen() Result {
	res := r.Fixed
	if r.Kept {
		res = *r.Best
	}
	res.Elapsed = r.Elapsed
	return res
}

// PlanReordered plans p as PlanProgram does, and also p with its ops
// reordered by each of ReorderRules (see Reorder; one-engine traces
// only), each planning with the whole opts.Budget. The best reordering is
// kept when its bound and its size are both at most the input order's and
// one is lower (Reordered.Chosen).
func PlanReordered(p *trace.Program, opts Options) (Reordered, error) {
	start := time.Now()
	if p == nil || p.Trace == nil {
		return Reordered{}, fmt.Errorf("nil program: %w", ErrInvalidTrace)
	}
	fixed, err := planFixed(p, opts, start)
	if err != nil {
		return Reordered{}, err
	}
	out := Reordered{Fixed: fixed}
	var orders [][]int
	for _, rule := range ReorderRules {
		ro, err := Reorder(p, rule)
		if errors.Is(err, ErrNotReordered) {
			out.Skipped = err.Error()
			break
		}
		if err != nil {
			return Reordered{}, err
		}
		if slices.Equal(ro.Order, identity(len(p.Ops))) || slices.ContainsFunc(orders, func(o []int) bool { return slices.Equal(o, ro.Order) }) {
			continue
		}
		orders = append(orders, ro.Order)
		rp, err := ro.Trace.Resolve()
		if err != nil {
			return Reordered{}, fmt.Errorf("internal: reordered trace: %w", err)
		}
		r, err := planFixed(rp, opts, time.Now())
		if err != nil {
			return Reordered{}, err
		}
		if best := out.Best; best == nil || r.bound < best.bound || r.bound == best.bound && r.Plan.Size < best.Plan.Size {
			out.Best, out.Reordering = &r, ro
		}
	}
	if out.Best == nil && out.Skipped == "" {
		out.Skipped = "every rule kept the input order"
	}
	if best := out.Best; best != nil && best.bound <= fixed.bound && best.Plan.Size <= fixed.Plan.Size &&
		(best.bound < fixed.bound || best.Plan.Size < fixed.Plan.Size) {
		out.Kept = true
	}
	if len(p.Trace.Engines) == 1 {
		ob, err := OrderBound(p)
		if err != nil && !errors.Is(err, ErrTooLarge) {
			return Reordered{}, err
		}
		out.OrderBound = ob
	}
	out.Elapsed = time.Since(start)
	return out, nil
}

// overlaps reports whether a and b share a byte.
func overlaps(a, b *ranges.Set) bool {
	_, hit := a.OverlapsSet(b)
	return hit
}
