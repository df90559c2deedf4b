package analysis

import (
	"container/heap"
	"math"
	"slices"

	"github.com/subarena/subarena/bench"
	sasync "github.com/subarena/subarena/sync"
	"github.com/subarena/subarena/trace"
)

// hostVariant returns in's trace as the host program that learns of
// completions as c says (Poll or Stall), written with the syncs it adds: before
// each alloc step, one sync per op that has ended by then (the host's time
// for Poll; for Stall the horizon, the earliest start of any op still to be
// submitted, so no op starts later than in the original schedule and
// LiveLB is unchanged). Which ops these are depends on the schedule alone,
// not on placement. For SyncOnly it returns the trace unchanged.
func hostVariant(in *Info, c Completions) *trace.Trace {
	p := in.P
	if c != Poll && c != Stall {
		return p.Trace
	}
	t := *p.Trace
	t.Steps = make([]trace.Step, 0, len(p.Trace.Steps))
	var pending endHeap
	done := make([]bool, len(p.Ops))
	var host int64
	// An op completes with everything that happens-before it, as a sync
	// completes it on the Timeline; those need no sync of their own.
	complete := func(k int) {
		done[k] = true
		for j := range k {
			if !done[j] && in.Order.HappensBefore(j, k) {
				done[j] = true
			}
		}
	}
	for i, s := range p.Trace.Steps {
		if s.Kind == trace.KindAlloc {
			now := host
			if c == Stall {
				now = max(host, in.Horizon[i])
			}
			for pending.Len() > 0 && pending.h[0].end <= now {
				it := heap.Pop(&pending).(endItem)
				k := int(it.ev.Seq)
				if done[k] {
					continue
				}
				t.Steps = append(t.Steps, trace.Step{Kind: trace.KindSync, Name: p.Ops[k].Name})
				complete(k)
			}
			host = now
		}
		t.Steps = append(t.Steps, s)
		switch s.Kind {
		case trace.KindOp:
			k := p.StepIndex[i]
			// The heap orders by end, then by op index (Seq carries it here).
			heap.Push(&pending, endItem{end: in.End[k], ev: sasync.Event{Seq: sasync.Seq(k)}})
		case trace.KindSync:
			k := p.StepIndex[i]
			host = max(host, in.End[k])
			complete(k)
		}
	}
	return &t
}

// earlyRelease returns in's trace with each released buffer released right
// after the last step that names it (an op using it or a view of it, a view
// of it, a discard of one), when that comes before its own release: the host
// program of an engine that knows from its graph when each buffer dies and
// lets it go then.
func earlyRelease(in *Info) *trace.Trace {
	p := in.P
	last := make([]int, len(p.Buffers))
	for b := range last {
		last[b] = p.Buffers[b].Step
	}
	for i, s := range p.Trace.Steps {
		switch s.Kind {
		case trace.KindOp:
			for _, u := range p.Ops[p.StepIndex[i]].Uses {
				last[u.Ref.Buffer] = max(last[u.Ref.Buffer], i)
			}
		case trace.KindView:
			b := p.Views[p.StepIndex[i]].Buffer
			last[b] = max(last[b], i)
		case trace.KindRelease:
			if ref, ok := p.Lookup(s.Name); ok && ref.View >= 0 {
				last[ref.Buffer] = max(last[ref.Buffer], i)
			}
		}
	}
	after := map[int][]trace.Step{}
	moved := map[int]bool{}
	for b := range p.Buffers {
		r := p.Buffers[b].Release
		if r < 0 || last[b] >= r {
			continue
		}
		after[last[b]] = append(after[last[b]], p.Trace.Steps[r])
		moved[r] = true
	}
	t := *p.Trace
	t.Steps = make([]trace.Step, 0, len(p.Trace.Steps))
	for i, s := range p.Trace.Steps {
		if !moved[i] {
			t.Steps = append(t.Steps, s)
		}
		t.Steps = append(t.Steps, after[i]...)
	}
	return &t
}

// estimated returns the Info of in's trace with every op's cost scaled by a
// factor drawn uniformly from [1-spread, 1+spread] (a seeded SplitMix64):
// the schedule an engine's cost model would predict, for PredictEstimate.
func estimated(in *Info, spread float64, seed uint64) (*Info, error) {
	t := *in.P.Trace
	t.Steps = slices.Clone(in.P.Trace.Steps)
	rng := bench.NewSplitMix64(seed)
	for i := range t.Steps {
		s := &t.Steps[i]
		if s.Kind != trace.KindOp {
			continue
		}
		u := float64(rng.Next()>>11) / (1 << 53)
		s.Cost = max(1, int64(math.Round(float64(s.Cost)*(1+spread*(2*u-1)))))
	}
	p, err := t.Resolve()
	if err != nil {
		return nil, err
	}
	return NewInfo(p)
}
