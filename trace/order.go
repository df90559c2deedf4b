package trace

import (
	"fmt"

	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Order is the happens-before relation of a Program's ops, built by submitting every op
// (with its waits) to a fresh sasync.Timeline and recording every sync as a host sync, in
// step order. Nothing completes on it: happens-before is structural.
type Order struct {
	Timeline *sasync.Timeline
	// Events[i] is the event of op i.
	Events []sasync.Event

	// clocks holds, per op k, the components of its event clock for the trace's engines:
	// clocks[k*engines+e] is the last seq of engine e that happens-before op k (op k's own
	// seq on its engine). It answers HappensBefore without the Timeline's lock.
	clocks  []sasync.Seq
	engines int
}

// NewOrder builds the Order of p. It fails (wrapping sasync.ErrTooManyEngines) when the
// trace has more engines than a Timeline supports.
func NewOrder(p *Program) (*Order, error) {
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	ne := len(p.Trace.Engines)
	o := &Order{Timeline: tl, Events: make([]sasync.Event, len(p.Ops)), clocks: make([]sasync.Seq, len(p.Ops)*ne),
		engines: ne}
	for i, s := range p.Trace.Steps {
		switch s.Kind {
		case KindOp:
			k := p.StepIndex[i]
			if o.Events[k], err = submitOp(tl, p, k, o.Events); err != nil {
				return nil, err
			}
			c, err := tl.EventClock(o.Events[k])
			if err != nil {
				return nil, fmt.Errorf("%w: op %q: %w", ErrReplay, p.Ops[k].Name, err)
			}
			copy(o.clocks[k*ne:(k+1)*ne], c[:ne])
		case KindSync:
			if err := tl.HostSync(o.Events[p.StepIndex[i]]); err != nil {
				return nil, fmt.Errorf("%w: sync at step %d: %w", ErrReplay, i, err)
			}
		}
	}
	return o, nil
}

// HappensBefore reports whether op a happens-before op b. Cost: O(1), no lock.
func (o *Order) HappensBefore(a, b int) bool {
	if o.clocks == nil {
		hb, err := o.Timeline.HappensBefore(o.Events[a], o.Events[b])
		return err == nil && hb
	}
	ea := o.Events[a]
	return a != b && ea.Seq <= o.clocks[b*o.engines+int(ea.Engine)]
}

// Seen returns component e of op k's event clock: the last seq of engine e that
// happens-before op k, or op k's own seq when e is its engine. Op a happens-before op b
// exactly when a != b and Events[a].Seq <= Seen(b, Events[a].Engine), so a question
// about many pairs can be answered by comparing seqs with thresholds. Cost: O(1).
func (o *Order) Seen(k, e int) sasync.Seq {
	if o.clocks == nil {
		c, err := o.Timeline.EventClock(o.Events[k])
		if err != nil {
			return 0
		}
		return c[e]
	}
	return o.clocks[k*o.engines+e]
}

func newTimeline(p *Program) (*sasync.Timeline, error) {
	tl := sasync.NewTimeline()
	for _, e := range p.Trace.Engines {
		if _, err := tl.AddEngine(e, sasync.Compute); err != nil {
			return nil, fmt.Errorf("%w: engine %q: %w", ErrReplay, e, err)
		}
	}
	return tl, nil
}

// submitOp submits op k on tl with its waits (events of earlier ops, from events).
func submitOp(tl *sasync.Timeline, p *Program, k int, events []sasync.Event) (sasync.Event, error) {
	op := &p.Ops[k]
	var waits []sasync.Event
	for _, w := range op.Waits {
		waits = append(waits, events[w])
	}
	ev, err := tl.Submit(sasync.EngineID(op.Engine), waits...)
	if err != nil {
		return ev, fmt.Errorf("%w: op %q: %w", ErrReplay, op.Name, err)
	}
	return ev, nil
}

// SameElements reports whether refs a and b, their buffers placed at arena offsets baseA
// and baseB, put element i of one over element i of the other for every i in row-major
// order (dimensions of size 1 aside): the in-place relation docs/TRACE.md's "inplace"
// allows, which check.Plan accepts between two uses of one inplace op.
func (p *Program) SameElements(a Ref, baseA int64, b Ref, baseB int64) bool {
	return strided.SameElements(p.Layout(a), baseA, p.Layout(b), baseB)
}
