package analysis

import (
	"math"

	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// never is the death step of bytes held to the end of the trace.
const never = trace.Never

// opUse names one use: op index and index into its Uses.
type opUse = trace.OpUse

// Info is what the analysis knows of a Program before any placement: the
// schedule the replay simulates (it does not depend on placement), the
// donations the replay plans, and per buffer its pieces, LiveLB segments and
// the facts an engine could pass as a hint.
type Info struct {
	P      *trace.Program
	Order  *trace.Order
	UsesOf [][]opUse
	// UserClocks[k] is everything that happens-before op k (itself included).
	UserClocks []sasync.Clock
	Donations  []replay.Donation

	// The schedule of the replay: per op submit, start and end; per step the
	// host time when the step is issued; Horizon[i] is the latest time the
	// host could wait until before step i without delaying any op: the
	// earliest start of an op submitted at step i or later.
	Submit, Start, End []int64
	HostAt             []int64
	Horizon            []int64
	Makespan           int64
	LiveLB             int64

	// Per buffer: its bytes cut by the step that lets each go (trace.Program.LetGo,
	// buffer-relative) and LiveLB's segments (check.LiveSegments).
	Pieces   [][]trace.Piece
	Segments [][]check.LiveSegment
	// Per buffer: schedule time of its first use's start and its last use's
	// end, the step of its last let-go (never: held to the end), the engines
	// of its users (bit set).
	FirstUse, LastUse []int64
	DeathStep         []int
	UserEngines       []uint32
	// OpOfStep maps an op step to its op index (-1 otherwise).
	OpOfStep []int
}

// NewInfo derives the Info of p.
func NewInfo(p *trace.Program) (*Info, error) {
	in := &Info{P: p}
	order, err := trace.NewOrder(p)
	if err != nil {
		return nil, err
	}
	in.Order = order
	in.UsesOf = p.UsesByBuffer()
	in.UserClocks = make([]sasync.Clock, len(p.Ops))
	for k := range p.Ops {
		if in.UserClocks[k], err = order.Timeline.EventClock(order.Events[k]); err != nil {
			return nil, err
		}
	}
	in.Donations = replay.Donations(p, order)
	in.schedule()
	sched := check.Schedule{Start: in.Start, End: in.End, Makespan: in.Makespan}
	in.LiveLB = check.LiveLowerBound(p, sched)
	in.Segments = check.LiveSegments(p, sched)
	n := len(p.Buffers)
	in.Pieces = make([][]trace.Piece, n)
	in.FirstUse, in.LastUse = make([]int64, n), make([]int64, n)
	in.DeathStep = make([]int, n)
	in.UserEngines = make([]uint32, n)
	for b := range p.Buffers {
		in.Pieces[b] = p.LetGo(b, 0)
		in.FirstUse[b], in.LastUse[b] = -1, -1
		for _, ou := range in.UsesOf[b] {
			if in.FirstUse[b] < 0 || in.Start[ou.Op] < in.FirstUse[b] {
				in.FirstUse[b] = in.Start[ou.Op]
			}
			in.LastUse[b] = max(in.LastUse[b], in.End[ou.Op])
			in.UserEngines[b] |= 1 << p.Ops[ou.Op].Engine
		}
		d := 0
		for _, pc := range in.Pieces[b] {
			d = max(d, pc.Step)
		}
		in.DeathStep[b] = d
	}
	return in, nil
}

// schedule simulates the replay's engines: FIFO per engine, an op starts when
// its engine's previous op and its waits have ended and not before the host
// submitted it; the host's time advances only at syncs.
func (in *Info) schedule() {
	p := in.P
	n := len(p.Ops)
	in.Submit, in.Start, in.End = make([]int64, n), make([]int64, n), make([]int64, n)
	in.HostAt = make([]int64, len(p.Trace.Steps))
	in.OpOfStep = make([]int, len(p.Trace.Steps))
	engineFree := make([]int64, len(p.Trace.Engines))
	var host int64
	for i, s := range p.Trace.Steps {
		in.HostAt[i] = host
		in.OpOfStep[i] = -1
		switch s.Kind {
		case trace.KindOp:
			k := p.StepIndex[i]
			in.OpOfStep[i] = k
			op := &p.Ops[k]
			start := max(host, engineFree[op.Engine])
			for _, w := range op.Waits {
				start = max(start, in.End[w])
			}
			in.Submit[k], in.Start[k], in.End[k] = host, start, start+op.Cost
			engineFree[op.Engine] = in.End[k]
		case trace.KindSync:
			host = max(host, in.End[p.StepIndex[i]])
		}
	}
	for k := range p.Ops {
		in.Makespan = max(in.Makespan, in.End[k])
	}
	in.Horizon = make([]int64, len(p.Trace.Steps)+1)
	in.Horizon[len(p.Trace.Steps)] = math.MaxInt64
	for i := len(p.Trace.Steps) - 1; i >= 0; i-- {
		in.Horizon[i] = in.Horizon[i+1]
		if k := in.OpOfStep[i]; k >= 0 {
			in.Horizon[i] = min(in.Horizon[i], in.Start[k])
		}
	}
}

// LiveAt returns the bytes of buffer b (buffer-relative) that LiveLB counts
// live at time t.
func (in *Info) LiveAt(b int, t int64) ranges.Set {
	var s ranges.Set
	for _, sg := range in.Segments[b] {
		if sg.From <= t && t < sg.To {
			s.Add(ranges.Range{Lo: sg.Lo, Hi: sg.Hi})
		}
	}
	return s
}

// UsedAfter returns the bytes of buffer b some use of which ends after t
// (still needed, or needed in the future), and the bytes no op uses at all.
func (in *Info) UsedAfter(b int, t int64) (after, unused ranges.Set) {
	var used ranges.Set
	for _, ou := range in.UsesOf[b] {
		fp, _ := in.P.Footprint(in.P.Ops[ou.Op].Uses[ou.Use].Ref)
		used.AddSet(&fp)
		if in.End[ou.Op] > t {
			after.AddSet(&fp)
		}
	}
	unused = ranges.FromRanges(ranges.Range{Lo: 0, Hi: in.P.Buffers[b].Size})
	unused.RemoveSet(&used)
	return after, unused
}
