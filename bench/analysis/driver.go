package analysis

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/liveness"
	sasync "github.com/subarena/subarena/sync"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// Completions says when the host learns that ops have completed.
type Completions int

const (
	// SyncOnly is replay.Run: only at the trace's syncs (the synced op and
	// what happens-before it), and at the end.
	SyncOnly Completions = iota
	// Poll: before each alloc the host also polls every submitted op and
	// learns of each that has ended by its current time (a non-blocking
	// event query, i.e. a sync that does not wait).
	Poll
	// Stall: before each alloc the host waits until the horizon, the
	// earliest start of any op it has yet to submit (so no op starts later
	// than in the replay: the schedule, hence LiveLB, is unchanged), then
	// polls.
	Stall
	// StallOnGrow: Stall, but only before an alloc that would otherwise
	// raise the high-water mark (no clean or safe held region fits).
	StallOnGrow
	// Oracle: before allocating B the host learns of every op that ends by
	// the start of B's first user. Clairvoyant: a bound, not a policy.
	Oracle
)

// ParseCompletions returns the Completions named s.
func ParseCompletions(s string) (Completions, error) {
	for c := SyncOnly; c <= Oracle; c++ {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown completions %q", s)
}

func (c Completions) String() string {
	return [...]string{"sync-only", "poll", "stall", "stall-on-grow", "oracle"}[c]
}

// Options configure a replay through the shadow allocator (PrintBreakdown).
type Options struct {
	// Mode is the liveness mode of the policy replayed (PolicyMode).
	Mode liveness.Mode
	// Fit is the arena's fit strategy.
	Fit arena.Fit
	// Completions is when the host learns of completed ops.
	Completions Completions
	// placer, if set, chooses offsets instead of the Allocator's rule.
	placer placer
	// observer, if set, is called around every placement (not donations).
	observer observer
	// PredictWait lets an alloc take held bytes whose pending users are not
	// ordered before its point, when Predict accepts them; every op using
	// the buffer then waits for those users (an event wait, as a stream
	// waits on an event). With PredictSchedule such waits are on ops that
	// end before the waiting op would start anyway, so the schedule and
	// LiveLB are unchanged; other predictors may delay ops (result.Makespan).
	PredictWait Predict
	// Estimate is the schedule PredictEstimate believes (nil: the true one).
	Estimate *Info
	// PredictOnGrowth uses PredictWait only for an alloc that would
	// otherwise raise the high-water mark.
	PredictOnGrowth bool
	// WaitMatch is shadow.WaitMatch.
	WaitMatch float64
}

// Predict says which pending users an alloc may wait for.
type Predict int

const (
	// PredictNone: never (the Allocator today).
	PredictNone Predict = iota
	// PredictSchedule: users that end, in the replay's schedule, by the
	// start of the buffer's first user (the engine's cost model is exact).
	PredictSchedule
	// PredictEstimate: the same on Options.Estimate, a schedule from other
	// costs (an engine's estimate); a wrong guess delays ops.
	PredictEstimate
	// PredictAny: every known pending user, whatever it costs in time.
	PredictAny
)

func (p Predict) String() string {
	return [...]string{"none", "schedule", "estimate", "any"}[p]
}

// observer watches placements.
type observer interface {
	// Before is called before buffer b is placed at point pt (step i).
	Before(d *driver, i, b int, pt *sasync.Point)
	// After is called once it is placed.
	After(d *driver, i, b int, buf *shadowBuf)
}

// driver replays a Program against a shadow on the replay's simulated
// engines: replay.Run step for step, with the completion and placement
// variants of Options.
type driver struct {
	In   *Info
	Opts Options
	Tl   *sasync.Timeline
	S    *shadow

	Host    int64
	events  []sasync.Event
	opOf    map[sasync.Event]int
	pending endHeap
	Bufs    []*shadowBuf
	points  []sasync.Point
	Donated []bool
	Steps   []int64 // high-water mark after each step
	// Learned lists, per step, the ops the host learned of (completed and
	// host-synced) just before it, beyond the trace's own syncs.
	Learned map[int][]int
	cur     int
	// Stalls counts the allocs before which the host waited (StallOnGrow).
	Stalls int
	// AddedWaits lists, per op, the ops it was made to wait for (PredictWait).
	AddedWaits map[int][]int
	// The schedule as it ran: added waits may delay ops.
	start, end []int64
	engFree    []int64
}

// result is what a run measured.
type result struct {
	HWM, LiveLB int64
	// Makespan is when the last op ended; LiveLBRun is LiveLB on the schedule
	// as it ran (LiveLB when added waits delayed nothing).
	Makespan, LiveLBRun int64
	Ratio               float64
	Offsets             []int64 // per buffer (-1 for externals)
	Donated             int
	Steps               []int64
}

// PolicyMode returns the liveness mode of the fenced policies.
func PolicyMode(whole bool) liveness.Mode {
	if whole {
		return liveness.WholeFenced
	}
	return liveness.SubrangeFenced
}

// run replays in.P under opts.
func run(in *Info, opts Options) (*result, *driver, error) {
	p := in.P
	tl := sasync.NewTimeline()
	for _, e := range p.Trace.Engines {
		if _, err := tl.AddEngine(e, sasync.Compute); err != nil {
			return nil, nil, err
		}
	}
	s, err := newShadow(tl, p.Trace.Granule, opts.Mode, opts.Fit, opts.placer)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	s.WaitMatch = opts.WaitMatch
	d := &driver{In: in, Opts: opts, Tl: tl, S: s,
		events: make([]sasync.Event, len(p.Ops)), opOf: make(map[sasync.Event]int, len(p.Ops)),
		Bufs: make([]*shadowBuf, len(p.Buffers)), points: make([]sasync.Point, len(p.Buffers)),
		Donated: make([]bool, len(p.Buffers)), Steps: make([]int64, 0, len(p.Trace.Steps)),
		start: make([]int64, len(p.Ops)), end: make([]int64, len(p.Ops)), engFree: make([]int64, len(p.Trace.Engines))}
	for i := range p.Trace.Steps {
		if err := d.step(i); err != nil {
			return nil, d, fmt.Errorf("step %d (%s): %w", i, p.Trace.Steps[i].Kind, err)
		}
		if err := s.Err(); err != nil {
			return nil, d, fmt.Errorf("step %d: %w", i, err)
		}
		d.Steps = append(d.Steps, s.HighWater())
	}
	res := &result{HWM: s.HighWater(), LiveLB: in.LiveLB, Steps: d.Steps, Offsets: make([]int64, len(p.Buffers))}
	for k := range p.Ops {
		res.Makespan = max(res.Makespan, d.end[k])
	}
	res.LiveLBRun = res.LiveLB
	if res.Makespan != in.Makespan || !slices.Equal(d.end, in.End) {
		res.LiveLBRun = check.LiveLowerBound(p, check.Schedule{Start: d.start, End: d.end, Makespan: res.Makespan})
	}
	for b := range p.Buffers {
		res.Offsets[b] = -1
		if d.Bufs[b] != nil {
			res.Offsets[b] = d.Bufs[b].Off
		}
		if d.Donated[b] {
			res.Donated++
		}
	}
	if res.LiveLB > 0 {
		res.Ratio = float64(res.HWM) / float64(res.LiveLB)
	}
	return res, d, nil
}

// OpOf returns the op index of an event.
func (d *driver) OpOf(ev sasync.Event) (int, bool) {
	k, ok := d.opOf[ev]
	return k, ok
}

// learn completes (and host-syncs) every submitted op ending by t.
func (d *driver) learn(t int64) error {
	for d.pending.Len() > 0 && d.pending.h[0].end <= t {
		c := heap.Pop(&d.pending).(endItem)
		completedNow, err := d.complete(c.ev)
		if err != nil {
			return err
		}
		if !completedNow {
			continue
		}
		if err := d.Tl.HostSync(c.ev); err != nil {
			return err
		}
		if d.Learned == nil {
			d.Learned = map[int][]int{}
		}
		d.Learned[d.cur] = append(d.Learned[d.cur], d.opOf[c.ev])
	}
	return nil
}

// complete completes ev on the timeline unless it has completed already,
// and reports whether this call completed it.
func (d *driver) complete(ev sasync.Event) (bool, error) {
	if d.Tl.Completed(ev) {
		return false, nil
	}
	return true, d.Tl.Complete(ev)
}

// WithLearned returns the trace with a sync step inserted before each step
// for every op the host learned of there: the host program that observes
// completions (Poll, Stall) written as a subarena-trace/v1 host program, so
// that replay.Run and check.Plan can judge it.
func (d *driver) WithLearned() *trace.Trace {
	t := *d.In.P.Trace
	t.Steps = nil
	for i, s := range d.In.P.Trace.Steps {
		for _, k := range d.Learned[i] {
			t.Steps = append(t.Steps, trace.Step{Kind: trace.KindSync, Name: d.In.P.Ops[k].Name})
		}
		t.Steps = append(t.Steps, s)
	}
	return &t
}

func (d *driver) step(i int) error {
	d.cur = i
	p := d.In.P
	s := &p.Trace.Steps[i]
	switch s.Kind {
	case trace.KindAlloc:
		b := p.StepIndex[i]
		pt, err := d.Tl.Point(sasync.EngineID(p.Buffers[b].Engine))
		if err != nil {
			return err
		}
		for _, ou := range d.In.UsesOf[b] {
			c := &d.In.UserClocks[ou.Op]
			for e := range pt.Clock {
				pt.Clock[e] = min(pt.Clock[e], c[e])
			}
		}
		d.points[b] = pt
		if d.In.Donations[b].Op >= 0 {
			return nil
		}
		return d.place(i, b)
	case trace.KindOp:
		return d.op(i, p.StepIndex[i])
	case trace.KindRelease:
		ref, _ := p.Lookup(s.Name)
		buf := d.Bufs[ref.Buffer]
		if ref.View < 0 {
			return d.S.Release(buf)
		}
		fp, exact := p.Footprint(ref)
		return d.S.Discard(buf, &fp, exact)
	case trace.KindSync:
		k := p.StepIndex[i]
		if _, err := d.complete(d.events[k]); err != nil {
			return err
		}
		d.Host = max(d.Host, d.end[k])
		return d.Tl.HostSync(d.events[k])
	}
	return nil
}

// place allocates buffer b at the point recorded at its alloc step, after
// learning what Options.Completions lets the host learn.
func (d *driver) place(i, b int) error {
	in := d.In
	switch d.Opts.Completions {
	case Poll:
		if err := d.learn(d.Host); err != nil {
			return err
		}
	case Stall:
		d.Host = max(d.Host, in.Horizon[i])
		if err := d.learn(d.Host); err != nil {
			return err
		}
	case StallOnGrow:
		if d.S.wouldGrow(in.P.Buffers[b].Size, &d.points[b]) {
			d.Stalls++
			d.Host = max(d.Host, in.Horizon[i])
			if err := d.learn(d.Host); err != nil {
				return err
			}
		}
	case Oracle:
		if err := d.learn(max(d.Host, in.FirstUse[b])); err != nil {
			return err
		}
	}
	pt := d.points[b]
	if d.Opts.Completions != SyncOnly {
		// What the host learned since the alloc step orders later ops too.
		hc := d.Tl.HostClock()
		for e := range pt.Clock {
			pt.Clock[e] = max(pt.Clock[e], min(hc[e], d.narrow(b, e)))
		}
	}
	h := &hint{Buffer: b, Engine: in.P.Buffers[b].Engine, Step: i, HostTime: d.Host, DeathStep: in.DeathStep[b],
		FirstUse: in.FirstUse[b], LastUse: in.LastUse[b], UserEngines: in.UserEngines[b]}
	if d.Opts.observer != nil {
		d.Opts.observer.Before(d, i, b, &pt)
	}
	pred := d.Opts.PredictWait
	if pred != PredictNone && d.Opts.PredictOnGrowth && !d.S.wouldGrow(in.P.Buffers[b].Size, &pt) {
		pred = PredictNone
	}
	switch pred {
	case PredictSchedule, PredictEstimate:
		est := in
		if d.Opts.PredictWait == PredictEstimate && d.Opts.Estimate != nil {
			est = d.Opts.Estimate
		}
		by := est.FirstUse[b]
		d.S.WaitOK = func(ev sasync.Event) bool {
			k, ok := d.opOf[ev]
			return ok && est.End[k] <= by
		}
	case PredictAny:
		d.S.WaitOK = func(ev sasync.Event) bool { _, ok := d.opOf[ev]; return ok }
	}
	buf, err := d.S.Alloc(in.P.Buffers[b].Size, pt, h)
	d.S.WaitOK = nil
	if err != nil {
		return err
	}
	buf.Index = b
	d.Bufs[b] = buf
	d.S.Own(buf.Off, buf.Span, b)
	if d.Opts.observer != nil {
		d.Opts.observer.After(d, i, b, buf)
	}
	return nil
}

// narrow is the replay's narrowing of b's point on engine e: the most every
// user of b happens-after.
func (d *driver) narrow(b, e int) sasync.Seq {
	m := ^sasync.Seq(0)
	for _, ou := range d.In.UsesOf[b] {
		m = min(m, d.In.UserClocks[ou.Op][e])
	}
	return m
}

func (d *driver) op(i, k int) error {
	p := d.In.P
	op := &p.Ops[k]
	var waits []sasync.Event
	for _, w := range op.Waits {
		waits = append(waits, d.events[w])
	}
	if d.Opts.PredictWait != PredictNone {
		extra, err := d.fenceWaits(k)
		if err != nil {
			return err
		}
		waits = append(waits, extra...)
	}
	ev, err := d.Tl.Submit(sasync.EngineID(op.Engine), waits...)
	if err != nil {
		return err
	}
	d.events[k] = ev
	d.opOf[ev] = k
	start := max(d.Host, d.engFree[op.Engine])
	for _, w := range waits {
		start = max(start, d.end[d.opOf[w]])
	}
	d.start[k], d.end[k] = start, start+op.Cost
	d.engFree[op.Engine] = d.end[k]
	heap.Push(&d.pending, endItem{end: d.end[k], ev: ev})
	used := make([]bool, len(op.Uses))
	for _, use := range op.Uses {
		b := use.Ref.Buffer
		if d.Bufs[b] != nil || p.Buffers[b].External {
			continue
		}
		dn := d.In.Donations[b]
		if dn.Op != k {
			return fmt.Errorf("buffer %q is not placed", p.Buffers[b].Name)
		}
		if err := d.donate(i, k, b, dn, used); err != nil {
			return err
		}
	}
	for u, use := range op.Uses {
		if used[u] || p.Buffers[use.Ref.Buffer].External {
			continue
		}
		fp, _ := p.Footprint(use.Ref)
		if fp.IsEmpty() {
			continue
		}
		if err := d.S.Use(d.Bufs[use.Ref.Buffer], &fp, ev); err != nil {
			return fmt.Errorf("op %q uses %q: %w", op.Name, use.Name, err)
		}
	}
	return nil
}

// fenceWaits returns the events op k must wait for so that it is ordered
// after the fence of every buffer it uses: the fence's events not already
// completed (the op is submitted after that) nor ordered before the op by
// its engine, its waits or the host's syncs. Each added wait must end by
// the op's start in the schedule (PredictWait only takes such bytes).
func (d *driver) fenceWaits(k int) ([]sasync.Event, error) {
	p := d.In.P
	op := &p.Ops[k]
	var clk sasync.Clock
	pt, err := d.Tl.Point(sasync.EngineID(op.Engine))
	if err != nil {
		return nil, err
	}
	clk = pt.Clock
	for _, w := range op.Waits {
		c, err := d.Tl.EventClock(d.events[w])
		if err != nil {
			return nil, err
		}
		clk.Join(&c)
	}
	done := d.Tl.CompletedClock()
	var out []sasync.Event
	for _, use := range op.Uses {
		buf := d.Bufs[use.Ref.Buffer]
		if buf == nil || !buf.HasResidual {
			continue
		}
		for e := range buf.Residual {
			seq := buf.Residual[e]
			if seq == 0 || seq <= clk[e] || seq <= done[e] {
				continue
			}
			ev := sasync.Event{Engine: sasync.EngineID(e), Seq: seq}
			w, ok := d.opOf[ev]
			if !ok {
				return nil, fmt.Errorf("fence event %v is no op", ev)
			}
			if d.Opts.PredictWait == PredictSchedule && d.In.End[w] > d.In.Start[k] {
				return nil, fmt.Errorf("op %q would wait for %q, which ends at %d after its start %d",
					op.Name, p.Ops[w].Name, d.In.End[w], d.In.Start[k])
			}
			out = append(out, ev)
			clk.Observe(ev)
			if d.AddedWaits == nil {
				d.AddedWaits = map[int][]int{}
			}
			d.AddedWaits[k] = append(d.AddedWaits[k], w)
		}
	}
	return out, nil
}

// WithWaits returns the trace with the waits PredictWait added to ops (and
// the syncs the host learned, as WithLearned).
func (d *driver) WithWaits() *trace.Trace {
	t := d.WithLearned()
	steps := make([]trace.Step, len(t.Steps))
	copy(steps, t.Steps)
	for i := range steps {
		s := &steps[i]
		if s.Kind != trace.KindOp {
			continue
		}
		k, ok := d.In.P.OpIndex(s.Name)
		if !ok || len(d.AddedWaits[k]) == 0 {
			continue
		}
		s.Waits = append([]string(nil), s.Waits...)
		for _, w := range d.AddedWaits[k] {
			s.Waits = append(s.Waits, d.In.P.Ops[w].Name)
		}
	}
	t.Steps = steps
	return t
}

func (d *driver) donate(i, k, b int, dn replay.Donation, used []bool) error {
	p := d.In.P
	op := &p.Ops[k]
	read := op.Uses[dn.Read]
	src := d.Bufs[read.Ref.Buffer]
	fp, exact := p.Footprint(read.Ref)
	if !used[dn.Read] {
		if err := d.S.Use(src, &fp, d.events[k]); err != nil {
			return err
		}
		used[dn.Read] = true
	}
	nb, err := d.S.Donate(src, &fp, exact, d.events[k])
	if errors.Is(err, errRefused) {
		return d.place(i, b)
	}
	if err != nil {
		return err
	}
	nb.Index = b
	d.Bufs[b] = nb
	d.S.Own(nb.Off, nb.Span, b)
	d.Donated[b] = true
	return nil
}

type endItem struct {
	end int64
	ev  sasync.Event
}

type endHeap struct{ h []endItem }

func (q endHeap) Len() int { return len(q.h) }
func (q endHeap) Less(i, j int) bool {
	a, b := q.h[i], q.h[j]
	if a.end != b.end {
		return a.end < b.end
	}
	if a.ev.Engine != b.ev.Engine {
		return a.ev.Engine < b.ev.Engine
	}
	return a.ev.Seq < b.ev.Seq
}
func (q endHeap) Swap(i, j int) { q.h[i], q.h[j] = q.h[j], q.h[i] }
func (q *endHeap) Push(x any)   { q.h = append(q.h, x.(endItem)) }
func (q *endHeap) Pop() any {
	x := q.h[len(q.h)-1]
	q.h = q.h[:len(q.h)-1]
	return x
}

// Plan returns the run's placement as a trace.Plan for p (the program the
// run implies: the original one, or WithLearned/WithWaits resolved).
func (r *result) Plan(in *Info) *trace.Plan {
	pl := &trace.Plan{Trace: in.P.Trace.Name, Size: r.HWM, Offsets: map[string]int64{}}
	for b, off := range r.Offsets {
		if off >= 0 {
			pl.Offsets[in.P.Buffers[b].Name] = off
		}
	}
	return pl
}
