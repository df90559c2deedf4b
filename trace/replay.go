package trace

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Policy is the Allocator's release policy (zero: subrange-fenced).
	Policy subarena.Policy
	// Fit is the arena's fit strategy (zero: the arena's default).
	Fit arena.Fit
	// NoDonate turns donation off: every alloc takes new space at its allocation point.
	NoDonate bool
	// CheckInvariants runs the Allocator's and the Timeline's invariant checks after
	// every step (for tests; it costs O(state) per step).
	CheckInvariants bool
	// TimeAllocator measures the time spent inside the calls a host makes on the
	// Allocator and its Timeline (ReplayResult.AllocatorTime), at the cost of two clock
	// reads per call.
	TimeAllocator bool
	// Stop, when closed, ends the replay before its next step (or completion) with an
	// error matching ErrStopped; a call already inside the Allocator runs to its end.
	Stop <-chan struct{}
}

// ReplayResult is what a replay measured. Times are simulated cost units.
type ReplayResult struct {
	Trace  string
	Policy subarena.Policy
	// HWM is the arena's high-water mark: the arena size the replay needed.
	HWM int64
	// LiveLB is the lower bound no allocator beats on this schedule (see the package doc).
	LiveLB int64
	// Overhead is HWM / LiveLB - 1 (0 when LiveLB is 0).
	Overhead float64
	// PendingPeak is the most bytes pending users ever covered at once.
	PendingPeak int64
	// Waited counts allocations handed bytes whose previous users had not completed: the
	// writer is ordered after them (fenced hand-over), not after their completion.
	Waited int
	// Donated counts buffers placed in place over a dying read view.
	Donated int
	// Buffers counts alloc buffers, Ops ops; Makespan is when the last op completes.
	Buffers, Ops int
	Makespan     int64
	// Plan gives every alloc buffer the offset the Allocator chose; Size is HWM.
	Plan *Plan
	// AllocatorTime, with ReplayOptions.TimeAllocator, is the wall time spent inside the
	// calls the host program makes on the Allocator (Alloc, View, Use, Release, Discard,
	// Donate) and on its Timeline (Submit, Point, Complete, HostSync): what the
	// allocator costs, apart from the simulation, the per-step statistics the replay
	// records, and the result's analysis (LiveLB, lifetimes). Zero otherwise.
	AllocatorTime time.Duration
	// Steps has one record per trace step (after the step), OpTimes one per op, and
	// Lifetimes one per alloc buffer, for timelines and Perfetto.
	Steps     []StepRecord
	Final     StepRecord // after the final completions (Step = number of steps)
	OpTimes   []OpRecord
	Lifetimes []BufferLifetime
}

// StepRecord is the state right after one step.
type StepRecord struct {
	Step int
	// Time is the host's simulated time (it advances only at syncs).
	Time                            int64
	InUse, Live, Pending, HighWater int64
}

// OpRecord is one op's simulated schedule: submitted by the host at Submit, run over
// [Start, End) on its engine.
type OpRecord struct {
	Op, Engine         string
	Submit, Start, End int64
}

// BufferLifetime is one alloc buffer: where it was placed, when, and the lifetime of each
// piece of it (the bytes one release or discard lets go).
type BufferLifetime struct {
	Buffer       string
	Offset, Size int64
	Alloc        int64 // host time of the alloc step
	Donated      bool
	Pieces       []PieceLifetime
}

// PieceLifetime is a subrange of a buffer (buffer-relative [lo, hi)) with the host time
// that lets it go (-1: held to the end) and the span its users ran over ([-1, -1) if no
// op used it).
type PieceLifetime struct {
	Range             ranges.Range
	Released          int64
	FirstUse, LastUse int64
}

// Replay runs p's host program against a real Allocator (Unbounded mode, opts.Policy),
// simulating the engines: ops on one engine run in submission order; an op starts when
// the previous op of its engine and every op it waits for have completed, and not before
// the host submitted it; it runs for its cost. The host issues every step at once and
// waits only at a sync, which advances its time to the synced op's end; completions reach
// the Allocator (through the Timeline) only as the host observes them: a sync completes
// the synced op and everything that happens-before it, and the end of the trace
// completes the rest. So every reuse the Allocator makes rests on docs/TRACE.md's
// happens-before, which is what Check verifies. Each alloc takes bytes at its allocation point (sasync.Timeline.Point of its
// engine); each op's uses pin exactly their views' bytes until it completes; releases and
// discards hand bytes back under the policy.
//
// Donation: when the first op using buffer B writes it, is inplace, and reads a dense view
// (or buffer) R of another buffer with exactly B's size and the same element layout as
// B's written view, R's bytes are used by no later step, every later op using B
// happens-after that op, and R's buffer lets each of R's bytes go (by its release or a
// discard covering it) before B lets the byte over it go, B's allocation is deferred to
// that op and B is placed over R (Allocator.Donate). The last condition is Check's: for a
// byte two buffers share, the one that lets it go first must be used first, so an output
// that discards part of what it was handed (or is released) before its donor would be
// ordered ahead of the donor's users. If the Allocator refuses (another user of R's bytes
// still pending), B takes new space at the point recorded at its alloc step.
func Replay(p *Program, opts ReplayOptions) (*ReplayResult, error) {
	r, err := runReplay(p, opts)
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// runReplay runs the host program and the final completions; the replayer's allocator is
// closed when it returns.
func runReplay(p *Program, opts ReplayOptions) (*replayer, error) {
	r, err := newReplayer(p, opts)
	if err != nil {
		return nil, err
	}
	defer r.alloc.Close()
	for i := range p.Trace.Steps {
		if r.stopped() {
			return nil, fmt.Errorf("%w: before step %d", ErrStopped, i)
		}
		if err := r.step(i); err != nil {
			return nil, fmt.Errorf("%w: step %d (%s): %w", ErrReplay, i, p.Trace.Steps[i].Kind, err)
		}
		r.record(i)
		if opts.CheckInvariants {
			if err := r.alloc.CheckInvariants(); err != nil {
				return nil, fmt.Errorf("%w: after step %d: allocator invariants: %w", ErrReplay, i, err)
			}
			if err := r.tl.CheckInvariants(); err != nil {
				return nil, fmt.Errorf("%w: after step %d: timeline invariants: %w", ErrReplay, i, err)
			}
		}
	}
	if err := r.drain(math.MaxInt64); errors.Is(err, ErrStopped) {
		return nil, fmt.Errorf("%w: in the final completions", err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: final completions: %w", ErrReplay, err)
	}
	if err := r.alloc.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("%w: allocator invariants: %w", ErrReplay, err)
	}
	return r, nil
}

type replayer struct {
	p     *Program
	opts  ReplayOptions
	tl    *sasync.Timeline
	alloc *subarena.Allocator

	host       int64   // host time
	engineFree []int64 // when each engine's last op ends
	events     []sasync.Event
	submit     []int64
	start      []int64
	end        []int64
	pending    completionHeap

	bufs       []*subarena.Buffer
	views      []*subarena.View
	points     []sasync.Point // allocation point recorded at each alloc step
	allocTime  []int64
	usesOf     [][]opUse      // per buffer: the ops using it
	userClocks []sasync.Clock // per op: everything that happens-before it (itself included)
	deferred   []donation     // per buffer: the donation planned for it, if any
	donated    []bool         // per buffer: placed by donation

	steps    []StepRecord
	nDonated int
	pendPeak int64
	// allocTimeSpent sums the time inside the Allocator's and the Timeline's calls (with
	// opts.TimeAllocator).
	allocTimeSpent time.Duration
	// log lists, in order, the submissions of ops and the placements of buffers, from
	// which result counts the allocations handed pending bytes (see countWaited).
	log []replayEvent
}

// replayEvent is one op submission (buf < 0) or one buffer placement (op < 0) in a
// replay: the host time of a placement, and whether it counts toward Waited (an
// allocation, not a donation).
type replayEvent struct {
	op, buf int
	host    int64
	count   bool
}

func newReplayer(p *Program, opts ReplayOptions) (*replayer, error) {
	if !opts.Policy.Valid() {
		return nil, fmt.Errorf("%w: policy %d", ErrReplay, opts.Policy)
	}
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	a, err := subarena.New(subarena.Config{Granule: p.Trace.Granule, Policy: opts.Policy, Timeline: tl,
		Unbounded: true, Fit: opts.Fit})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	n := len(p.Ops)
	r := &replayer{p: p, opts: opts, tl: tl, alloc: a,
		engineFree: make([]int64, len(p.Trace.Engines)),
		events:     make([]sasync.Event, n), submit: make([]int64, n), start: make([]int64, n), end: make([]int64, n),
		bufs: make([]*subarena.Buffer, len(p.Buffers)), views: make([]*subarena.View, len(p.Views)),
		points: make([]sasync.Point, len(p.Buffers)), allocTime: make([]int64, len(p.Buffers)),
		donated: make([]bool, len(p.Buffers)),
		steps:   make([]StepRecord, 0, len(p.Trace.Steps)),
	}
	r.usesOf = usesByBuffer(p)
	order, err := NewOrder(p)
	if err != nil {
		return nil, err
	}
	r.userClocks = make([]sasync.Clock, n)
	for k := range p.Ops {
		if r.userClocks[k], err = order.Timeline.EventClock(order.Events[k]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
	}
	r.deferred = planDonations(p, r.usesOf, order, opts.NoDonate)
	return r, nil
}

// stopped reports whether opts.Stop is closed.
func (r *replayer) stopped() bool {
	select {
	case <-r.opts.Stop:
		return true
	default:
		return false
	}
}

// clock starts timing an Allocator or Timeline call (a zero time when not measuring);
// spent ends it.
func (r *replayer) clock() time.Time {
	if !r.opts.TimeAllocator {
		return time.Time{}
	}
	return time.Now()
}

func (r *replayer) spent(t0 time.Time) {
	if r.opts.TimeAllocator {
		r.allocTimeSpent += time.Since(t0)
	}
}

func (r *replayer) step(i int) error {
	p := r.p
	s := &p.Trace.Steps[i]
	switch s.Kind {
	case KindAlloc:
		b := p.StepIndex[i]
		t0 := r.clock()
		pt, err := r.tl.Point(sasync.EngineID(p.Buffers[b].Engine))
		r.spent(t0)
		if err != nil {
			return err
		}
		// Narrow the point to what every user of the buffer happens-after (a no-op when
		// they all happen-after it, as the format intends), so that fenced bytes never
		// reach a user unordered after their previous owner's users.
		for _, ou := range r.usesOf[b] {
			c := &r.userClocks[ou.op]
			for e := range pt.Clock {
				pt.Clock[e] = min(pt.Clock[e], c[e])
			}
		}
		r.points[b], r.allocTime[b] = pt, r.host
		if r.deferred[b].op >= 0 {
			return nil // placed when its writer is submitted
		}
		return r.place(b)
	case KindOp:
		return r.op(p.StepIndex[i])
	case KindRelease:
		t := p.Trace.Steps[i].Name
		ref, _ := p.Lookup(t)
		if ref.View < 0 {
			if r.bufs[ref.Buffer].Released() {
				// Every byte was discarded or donated away already: the Allocator
				// retired the buffer, and there is nothing left to let go.
				return nil
			}
			t0 := r.clock()
			defer r.spent(t0)
			return r.alloc.Release(r.bufs[ref.Buffer])
		}
		v, err := r.view(ref)
		if err != nil {
			return err
		}
		t0 := r.clock()
		err = r.alloc.Discard(v)
		r.spent(t0)
		switch {
		case err == nil:
		case errors.Is(err, subarena.ErrDoubleRelease):
			// Every byte of the view was discarded or donated away already.
		case errors.Is(err, subarena.ErrInvalidLayout):
			// Too many runs to discard exactly: the bytes stay held until the buffer goes.
		default:
			return err
		}
	case KindSync:
		// The host learns of completions only through syncs: completing the synced op
		// completes exactly what happens-before it. Ops that have finished in simulated
		// time but are not ordered before it stay pending for the Allocator.
		k := p.StepIndex[i]
		t0 := r.clock()
		defer r.spent(t0)
		if !r.tl.Completed(r.events[k]) {
			if err := r.tl.Complete(r.events[k]); err != nil {
				return err
			}
		}
		r.host = max(r.host, r.end[k])
		return r.tl.HostSync(r.events[k])
	}
	return nil
}

// place allocates buffer b at the point recorded at its alloc step.
func (r *replayer) place(b int) error {
	t0 := r.clock()
	buf, err := r.alloc.Alloc(r.p.Buffers[b].Size, r.points[b])
	r.spent(t0)
	if err != nil {
		return err
	}
	r.bufs[b] = buf
	r.log = append(r.log, replayEvent{op: -1, buf: b, host: r.host, count: true})
	return nil
}

// view returns the allocator view for ref, creating the chain of views on first use.
func (r *replayer) view(ref Ref) (*subarena.View, error) {
	b := r.bufs[ref.Buffer]
	if b == nil {
		return nil, fmt.Errorf("buffer %q is not placed", r.p.Buffers[ref.Buffer].Name)
	}
	if ref.View < 0 {
		return b.Whole(), nil
	}
	if v := r.views[ref.View]; v != nil && v.Buffer() == b {
		return v, nil
	}
	pv := &r.p.Views[ref.View]
	var (
		v   *subarena.View
		err error
	)
	if pv.Parent < 0 {
		t0 := r.clock()
		v, err = b.View(pv.Layout)
		r.spent(t0)
	} else {
		var parent *subarena.View
		if parent, err = r.view(Ref{Buffer: ref.Buffer, View: pv.Parent}); err != nil {
			return nil, err
		}
		l := pv.Layout.Clone()
		l.Offset -= parent.Layout().Offset
		t0 := r.clock()
		v, err = parent.View(l)
		r.spent(t0)
	}
	if err != nil {
		return nil, err
	}
	r.views[ref.View] = v
	return v, nil
}

func (r *replayer) op(k int) error {
	p := r.p
	op := &p.Ops[k]
	t0 := r.clock()
	ev, err := submitOp(r.tl, p, k, r.events)
	r.spent(t0)
	if err != nil {
		return err
	}
	r.events[k] = ev
	start := max(r.host, r.engineFree[op.Engine])
	for _, w := range op.Waits {
		start = max(start, r.end[w])
	}
	end, ok := addCheck(start, op.Cost)
	if !ok {
		return fmt.Errorf("%w: op %q ends beyond int64 time", ErrOverflow, op.Name)
	}
	r.submit[k], r.start[k], r.end[k] = r.host, start, end
	r.engineFree[op.Engine] = end
	r.pending.push(completion{end: end, ev: ev})
	r.log = append(r.log, replayEvent{op: k, buf: -1})

	// Donations this op carries out: pin the read first, then hand its bytes over.
	used := make([]bool, len(op.Uses))
	for _, use := range op.Uses {
		if b := use.Ref.Buffer; r.bufs[b] == nil && !p.Buffers[b].External {
			d := r.deferred[b]
			if d.op != k {
				return fmt.Errorf("buffer %q is not placed", p.Buffers[b].Name)
			}
			if err := r.donate(k, b, d, used); err != nil {
				return err
			}
		}
	}
	for u, use := range op.Uses {
		if used[u] || p.Buffers[use.Ref.Buffer].External {
			continue
		}
		if fp, _ := p.Footprint(use.Ref); fp.IsEmpty() {
			continue // a view of no bytes pins nothing (its buffer may be gone)
		}
		v, err := r.view(use.Ref)
		if err != nil {
			return err
		}
		t0 := r.clock()
		err = r.alloc.Use(v, ev, subarena.Access(use.Access))
		r.spent(t0)
		if err != nil {
			return fmt.Errorf("op %q uses %q: %w", op.Name, use.Name, err)
		}
	}
	return nil
}

// donate places buffer b for op k over the read view d.read, or at b's recorded point if
// the Allocator refuses.
func (r *replayer) donate(k, b int, d donation, used []bool) error {
	op := &r.p.Ops[k]
	rv, err := r.view(op.Uses[d.read].Ref)
	if err != nil {
		return err
	}
	if !used[d.read] {
		t0 := r.clock()
		err := r.alloc.Use(rv, r.events[k], subarena.Access(op.Uses[d.read].Access))
		r.spent(t0)
		if err != nil {
			return fmt.Errorf("op %q uses %q: %w", op.Name, op.Uses[d.read].Name, err)
		}
		used[d.read] = true
	}
	t0 := r.clock()
	nb, err := r.alloc.Donate(rv, r.events[k])
	r.spent(t0)
	if err != nil {
		return r.place(b)
	}
	r.bufs[b] = nb
	r.donated[b] = true
	r.nDonated++
	r.log = append(r.log, replayEvent{op: -1, buf: b, host: r.host})
	return nil
}

// drain completes, in time order, every op not yet completed that ends at or before t.
func (r *replayer) drain(t int64) error {
	for r.pending.len() > 0 && r.pending.min().end <= t {
		if r.stopped() {
			return ErrStopped
		}
		c := r.pending.pop()
		t0 := r.clock()
		done := r.tl.Completed(c.ev)
		var err error
		if !done {
			err = r.tl.Complete(c.ev)
		}
		r.spent(t0)
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *replayer) record(i int) {
	st := r.alloc.Stats()
	r.steps = append(r.steps, StepRecord{Step: i, Time: r.host, InUse: st.InUse, Live: st.Live,
		Pending: st.Pending, HighWater: st.HighWater})
	r.pendPeak = max(r.pendPeak, st.Pending)
}

// countWaited returns the number of allocations handed bytes that an op of another
// buffer used and that had not completed at the host's time then: the op was submitted
// before the allocation, and ends after the host's time. It replays r.log against the
// arena bytes each submitted op's uses of placed buffers reach, keeping for every byte the
// latest end of an op using it (a range-max index over the bytes the replay placed), so
// each allocation costs a query instead of a scan of the buffers placed before it.
func (r *replayer) countWaited() int {
	p := r.p
	type reach struct {
		set ranges.Set
		end int64
	}
	// Arena bytes of use u of op k, once both are known.
	arena := func(k, u int) ranges.Set {
		ref := p.Ops[k].Uses[u].Ref
		fp, _ := p.Footprint(ref)
		shifted, _ := translated(&fp, r.bufs[ref.Buffer].Offset())
		return shifted
	}
	var coords []int64
	for b, buf := range r.bufs {
		if buf != nil {
			g := buf.Range()
			coords = append(coords, g.Lo, g.Hi)
			for _, ou := range r.usesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
				for _, run := range fp.Runs() {
					coords = append(coords, run.Lo+buf.Offset(), run.Hi+buf.Offset())
				}
			}
		}
	}
	coords = compactCoords(coords)
	ix := newMaxIndex(coords)
	submitted := make([]bool, len(p.Ops))
	placed := make([]bool, len(p.Buffers))
	add := func(k, u int) {
		set := arena(k, u)
		for _, run := range set.Runs() {
			ix.raise(run, r.end[k])
		}
	}
	waited := 0
	for _, ev := range r.log {
		if ev.buf < 0 {
			k := ev.op
			submitted[k] = true
			for u, use := range p.Ops[k].Uses {
				if placed[use.Ref.Buffer] {
					add(k, u)
				}
			}
			continue
		}
		b := ev.buf
		if ev.count && ix.max(r.bufs[b].Range()) > ev.host {
			waited++
		}
		placed[b] = true
		for _, ou := range r.usesOf[b] {
			if !submitted[ou.op] {
				break // ops are submitted in order
			}
			add(ou.op, ou.use)
		}
	}
	return waited
}

// maxIndex keeps, over byte ranges with ends among its coordinates, the largest value
// raised over each byte, and answers the largest over a range: O(log n) each.
type maxIndex struct {
	coords []int64
	size   int
	tag    []int64 // raised over the node's whole range
	sub    []int64 // the largest value over any byte of the node's range
}

func newMaxIndex(coords []int64) *maxIndex {
	n := 1
	for n < len(coords)-1 {
		n <<= 1
	}
	ix := &maxIndex{coords: coords, size: n, tag: make([]int64, 2*n), sub: make([]int64, 2*n)}
	for i := range ix.tag {
		ix.tag[i], ix.sub[i] = math.MinInt64, math.MinInt64
	}
	return ix
}

func (ix *maxIndex) leaves(r ranges.Range) (int, int) {
	lo, _ := slices.BinarySearch(ix.coords, r.Lo)
	hi, _ := slices.BinarySearch(ix.coords, r.Hi)
	return lo + ix.size, hi + ix.size
}

// raise raises every byte of r (non-empty) to at least x.
func (ix *maxIndex) raise(r ranges.Range, x int64) {
	l0, r0 := ix.leaves(r)
	for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			ix.tag[l], ix.sub[l] = max(ix.tag[l], x), max(ix.sub[l], x)
			l++
		}
		if h&1 == 1 {
			h--
			ix.tag[h], ix.sub[h] = max(ix.tag[h], x), max(ix.sub[h], x)
		}
	}
	for _, v := range [2]int{l0, r0 - 1} {
		for ; v >= 1; v >>= 1 {
			ix.sub[v] = max(ix.sub[v], x)
		}
	}
}

// max returns the largest value raised over any byte of r (MinInt64 for none or empty r).
func (ix *maxIndex) max(r ranges.Range) int64 {
	if r.Empty() {
		return math.MinInt64
	}
	l0, r0 := ix.leaves(r)
	out := int64(math.MinInt64)
	for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			out = max(out, ix.sub[l])
			l++
		}
		if h&1 == 1 {
			h--
			out = max(out, ix.sub[h])
		}
	}
	for _, v := range [2]int{l0, r0 - 1} {
		for v >>= 1; v >= 1; v >>= 1 {
			out = max(out, ix.tag[v])
		}
	}
	return out
}
