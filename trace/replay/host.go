package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/checked"
	sasync "github.com/subarena/subarena/sync"
	"github.com/subarena/subarena/trace"
)

func (r *replayer) step(i int) error {
	p := r.p
	s := &p.Trace.Steps[i]
	switch s.Kind {
	case trace.KindAlloc:
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
			c := &r.userClocks[ou.Op]
			for e := range pt.Clock {
				pt.Clock[e] = min(pt.Clock[e], c[e])
			}
		}
		r.points[b], r.allocTime[b] = pt, r.host
		if r.deferred[b].Op >= 0 {
			return nil // placed when its writer is submitted
		}
		return r.place(b)
	case trace.KindOp:
		return r.op(p.StepIndex[i])
	case trace.KindRelease:
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
	case trace.KindSync:
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
	var opts subarena.AllocOptions
	if r.opts.WaitReuse && len(r.usesOf[b]) > 0 {
		opts.MayWait = r.waitFreeFor(b)
	}
	t0 := r.clock()
	buf, err := r.alloc.AllocWith(r.p.Buffers[b].Size, r.points[b], opts)
	r.spent(t0)
	if err != nil {
		return err
	}
	r.bufs[b] = buf
	r.log = append(r.log, replayEvent{op: -1, buf: b, host: r.host, count: true})
	return nil
}

// waitFreeFor returns the MayWait of buffer b's alloc: the events of ops that end no
// later than any op using b can start, as far as the replay knows it now — an op starts
// no earlier than the host's time, its engine's last queued op, and the ops it waits
// for that are already submitted, and an op that happens-after b's first op no earlier
// than that op. Every op using b waits for what the alloc takes, so waiting for such an
// op delays none of them.
func (r *replayer) waitFreeFor(b int) func(sasync.Event) bool {
	earliest := int64(math.MaxInt64)
	first := r.usesOf[b][0].Op
	for _, u := range r.usesOf[b] {
		if u.Op != first && r.order.HappensBefore(first, u.Op) {
			continue // starts after first ends
		}
		op := &r.p.Ops[u.Op]
		start := max(r.host, r.engineFree[op.Engine])
		for _, w := range op.Waits {
			if !r.events[w].IsZero() {
				start = max(start, r.end[w])
			}
		}
		earliest = min(earliest, start)
	}
	return func(ev sasync.Event) bool {
		k2 := r.opOf(ev)
		return k2 >= 0 && r.end[k2] <= earliest
	}
}

// opOf returns the op whose completion ev is, or -1.
func (r *replayer) opOf(ev sasync.Event) int {
	e, i := int(ev.Engine), int(ev.Seq)-1
	if e < 0 || e >= len(r.opOfSeq) || i < 0 || i >= len(r.opOfSeq[e]) {
		return -1
	}
	return r.opOfSeq[e][i]
}

// residueWaits returns the ops op k must wait for beyond its own waits: those the
// buffers it uses were handed over from while still pending (Buffer.AppendWaits), less
// those the trace already orders before k.
func (r *replayer) residueWaits(k int) []int {
	var out []int
	var evs []sasync.Event
	for _, use := range r.p.Ops[k].Uses {
		evs = r.bufs[use.Ref.Buffer].AppendWaits(evs[:0]) // nil for externals: none
		for _, ev := range evs {
			if w := r.opOf(ev); w >= 0 && !r.order.HappensBefore(w, k) && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// view returns the allocator view for ref, creating the chain of views on first use.
func (r *replayer) view(ref trace.Ref) (*subarena.View, error) {
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
		if parent, err = r.view(trace.Ref{Buffer: ref.Buffer, View: pv.Parent}); err != nil {
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
	var extra []int
	if r.opts.WaitReuse {
		extra = r.residueWaits(k)
		r.addedWaits[k] = extra
	}
	t0 := r.clock()
	ev, err := submitOp(r.tl, p, k, r.events, extra)
	r.spent(t0)
	if err != nil {
		return err
	}
	r.events[k] = ev
	if r.opts.WaitReuse {
		r.opOfSeq[op.Engine] = append(r.opOfSeq[op.Engine], k)
	}
	start := max(r.host, r.engineFree[op.Engine])
	for _, w := range op.Waits {
		start = max(start, r.end[w])
	}
	for _, w := range extra {
		start = max(start, r.end[w])
	}
	end, ok := checked.Add(start, op.Cost)
	if !ok {
		return fmt.Errorf("%w: op %q ends beyond int64 time", trace.ErrOverflow, op.Name)
	}
	r.submit[k], r.start[k], r.end[k] = r.host, start, end
	r.engineFree[op.Engine] = end
	r.pending.Push(completion{end: end, ev: ev})
	r.log = append(r.log, replayEvent{op: k, buf: -1})

	// Donations this op carries out: pin the read first, then hand its bytes over.
	used := make([]bool, len(op.Uses))
	for _, use := range op.Uses {
		if b := use.Ref.Buffer; r.bufs[b] == nil && !p.Buffers[b].External {
			d := r.deferred[b]
			if d.Op != k {
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

// donate places buffer b for op k over the read view d.Read, or at b's recorded point if
// the Allocator refuses.
func (r *replayer) donate(k, b int, d Donation, used []bool) error {
	op := &r.p.Ops[k]
	rv, err := r.view(op.Uses[d.Read].Ref)
	if err != nil {
		return err
	}
	if !used[d.Read] {
		t0 := r.clock()
		err := r.alloc.Use(rv, r.events[k], subarena.Access(op.Uses[d.Read].Access))
		r.spent(t0)
		if err != nil {
			return fmt.Errorf("op %q uses %q: %w", op.Name, op.Uses[d.Read].Name, err)
		}
		used[d.Read] = true
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
	for r.pending.Len() > 0 && r.pending.Min().end <= t {
		if r.stopped() {
			return trace.ErrStopped
		}
		c := r.pending.Pop()
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

// completion is a simulated op end, ordered by time then event.
type completion struct {
	end int64
	ev  sasync.Event
}

func (c completion) less(o completion) bool {
	if c.end != o.end {
		return c.end < o.end
	}
	if c.ev.Engine != o.ev.Engine {
		return c.ev.Engine < o.ev.Engine
	}
	return c.ev.Seq < o.ev.Seq
}

// newTimeline returns a Timeline with one engine per trace engine, in trace order.
func newTimeline(p *trace.Program) (*sasync.Timeline, error) {
	tl := sasync.NewTimeline()
	for _, e := range p.Trace.Engines {
		if _, err := tl.AddEngine(e, sasync.Compute); err != nil {
			return nil, fmt.Errorf("%w: engine %q: %w", trace.ErrReplay, e, err)
		}
	}
	return tl, nil
}

// submitOp submits op k on tl with its waits and extra ones (events of earlier ops,
// from events).
func submitOp(tl *sasync.Timeline, p *trace.Program, k int, events []sasync.Event, extra []int) (sasync.Event, error) {
	op := &p.Ops[k]
	var waits []sasync.Event
	for _, w := range op.Waits {
		waits = append(waits, events[w])
	}
	for _, w := range extra {
		waits = append(waits, events[w])
	}
	ev, err := tl.Submit(sasync.EngineID(op.Engine), waits...)
	if err != nil {
		return ev, fmt.Errorf("%w: op %q: %w", trace.ErrReplay, op.Name, err)
	}
	return ev, nil
}
