package replay

import (
	"errors"
	"fmt"
	"math"
	"time"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// Options configure Run.
type Options struct {
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
	// Allocator and its Timeline (Result.AllocatorTime), at the cost of two clock
	// reads per call.
	TimeAllocator bool
	// Stop, when closed, ends the replay before its next step (or completion) with an
	// error matching trace.ErrStopped; a call already inside the Allocator runs to its end.
	Stop <-chan struct{}
	// WaitReuse allocates with subarena.AllocOptions.MayWait (wait-fenced reuse): under
	// the fenced policies an alloc may also take held bytes whose pending users end, in
	// the simulated schedule, no later than the buffer's first op can start — after the
	// host's time, its engine's queued ops and the ops it waits for — so that waiting for
	// them delays nothing. Every op using such a buffer is submitted with the buffer's
	// waits (Buffer.AppendWaits); Result.AddedWaits lists them, and Result.WithWaits
	// writes the trace the plan is safe for. An engine with an exact cost model could do
	// the same.
	WaitReuse bool
}

// Result is what a replay measured. Times are simulated cost units.
type Result struct {
	// Trace is the trace's name, Policy the Allocator's release policy.
	Trace  string
	Policy subarena.Policy
	// HWM is the arena's high-water mark: the arena size the replay needed.
	HWM int64
	// LiveLB is the lower bound no safe allocator placing buffers at offsets beats on this
	// schedule (see the package doc and check.LiveLowerBound).
	LiveLB int64
	// Overhead is HWM / LiveLB - 1 (0 when LiveLB is 0).
	Overhead float64
	// PendingPeak is the most bytes pending users ever covered at once.
	PendingPeak int64
	// HeldPeak is the most bytes the host program held at once (allocated, not yet
	// released, discarded or donated: Stats.Live after each step). Held bytes are
	// pairwise distinct in any allocator, online or offline, that runs this host
	// program, so none needs less; it exceeds LiveLB when the program holds bytes no
	// pending or future op needs (allocated ahead of use, released late).
	HeldPeak int64
	// Waited counts allocations handed bytes whose previous users had not completed: the
	// writer is ordered after them (fenced hand-over), not after their completion.
	Waited int
	// Donated counts buffers placed in place over a dying read view.
	Donated int
	// Buffers counts alloc buffers, Ops ops; Makespan is when the last op completes.
	Buffers, Ops int
	Makespan     int64
	// Plan gives every alloc buffer the offset the Allocator chose; Size is HWM.
	Plan *trace.Plan
	// AllocatorTime, with Options.TimeAllocator, is the wall time spent inside the
	// calls the host program makes on the Allocator (Alloc, View, Use, Release, Discard,
	// Donate) and on its Timeline (Submit, Point, Complete, HostSync): what the
	// allocator costs, apart from the simulation, the per-step statistics the replay
	// records, and the result's analysis (LiveLB, lifetimes). Zero otherwise.
	AllocatorTime time.Duration
	// AddedWaits, with Options.WaitReuse, lists per op the ops it was made to wait for
	// beyond its own waits (nil without). WithWaits adds them to the trace.
	AddedWaits [][]int
	// Steps has one record per trace step (after the step), OpTimes one per op, and
	// Lifetimes one per alloc buffer, for timelines and Perfetto.
	Steps     []StepRecord
	Final     StepRecord // after the final completions (Step = number of steps)
	OpTimes   []OpRecord
	Lifetimes []BufferLifetime
}

// StepRecord is the state right after one step.
type StepRecord struct {
	// Step is the step's index.
	Step int
	// Time is the host's simulated time (it advances only at syncs).
	Time int64
	// InUse, Live, Pending and HighWater are the Allocator's Stats of the same names.
	InUse, Live, Pending, HighWater int64
}

// OpRecord is one op's simulated schedule: submitted by the host at Submit, run over
// [Start, End) on its engine.
type OpRecord struct {
	// Op and Engine name the op and its engine.
	Op, Engine string
	// Submit is the host time of the op's step; the op ran over [Start, End).
	Submit, Start, End int64
}

// BufferLifetime is one alloc buffer: where it was placed, when, and the lifetime of each
// piece of it (the bytes one release or discard lets go).
type BufferLifetime struct {
	// Buffer names the buffer; Offset and Size are its arena bytes.
	Buffer       string
	Offset, Size int64
	// Alloc is the host time of the alloc step.
	Alloc int64
	// Donated says the buffer was placed over a dying read view (see Run).
	Donated bool
	// Pieces are the buffer's bytes as trace.Program.LetGo cuts them, in its order.
	Pieces []PieceLifetime
}

// PieceLifetime is a subrange of a buffer (buffer-relative [lo, hi)) with the host time
// that lets it go (-1: held to the end) and the span its users ran over ([-1, -1) if no
// op used it).
type PieceLifetime struct {
	// Range is the bounds of the piece's bytes, buffer-relative.
	Range ranges.Range
	// Released is the host time of the step that lets the piece go, -1 when held.
	Released int64
	// FirstUse is the earliest start of an op using the piece's bytes, LastUse the latest
	// end of one (both -1 when no op used them).
	FirstUse, LastUse int64
}

// Run runs p's host program against a real Allocator (Unbounded mode, opts.Policy),
// simulating the engines: ops on one engine run in submission order; an op starts when
// the previous op of its engine and every op it waits for have completed, and not before
// the host submitted it; it runs for its cost. The host issues every step at once and
// waits only at a sync, which advances its time to the synced op's end; completions reach
// the Allocator (through the Timeline) only as the host observes them: a sync completes
// the synced op and everything that happens-before it, and the end of the trace
// completes the rest. So every reuse the Allocator makes rests on docs/TRACE.md's
// happens-before, which is what check.Plan verifies. Each alloc takes bytes at its
// allocation point (sasync.Timeline.Point of its engine); each op's uses pin exactly
// their views' bytes until it completes; releases and discards hand bytes back under the
// policy.
//
// Donation: when the first op using buffer B writes it, is inplace, and reads R, another
// buffer or a dense view that is one part of one (never a view of all of it: see
// Donations), with exactly B's size and the same element layout as B's written view, R's
// bytes are used by no later step, every later op using B happens-after that op, and R's
// buffer lets each of R's bytes go (by its release or a discard covering it) before B lets
// the byte over it go, B's allocation is deferred to that op and B is placed over R
// (Allocator.Donate). The last condition is check.Plan's: for a byte two buffers share, the
// one that lets it go first must be used first, so an output that discards part of what it
// was handed (or is released) before its donor would be ordered ahead of the donor's users.
// If the Allocator refuses (another user of R's bytes still pending), B takes new space at
// the point recorded at its alloc step.
func Run(p *trace.Program, opts Options) (*Result, error) {
	r, err := runReplay(p, opts)
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// runReplay runs the host program and the final completions; the replayer's allocator is
// closed when it returns.
func runReplay(p *trace.Program, opts Options) (*replayer, error) {
	r, err := newReplayer(p, opts)
	if err != nil {
		return nil, err
	}
	defer r.alloc.Close()
	for i := range p.Trace.Steps {
		if r.stopped() {
			return nil, fmt.Errorf("%w: before step %d", trace.ErrStopped, i)
		}
		if err := r.step(i); err != nil {
			return nil, fmt.Errorf("%w: step %d (%s): %w", trace.ErrReplay, i, p.Trace.Steps[i].Kind, err)
		}
		r.record(i)
		if opts.CheckInvariants {
			if err := r.alloc.CheckInvariants(); err != nil {
				return nil, fmt.Errorf("%w: after step %d: allocator invariants: %w", trace.ErrReplay, i, err)
			}
			if err := r.tl.CheckInvariants(); err != nil {
				return nil, fmt.Errorf("%w: after step %d: timeline invariants: %w", trace.ErrReplay, i, err)
			}
		}
	}
	if err := r.drain(math.MaxInt64); errors.Is(err, trace.ErrStopped) {
		return nil, fmt.Errorf("%w: in the final completions", err)
	} else if err != nil {
		return nil, fmt.Errorf("%w: final completions: %w", trace.ErrReplay, err)
	}
	if err := r.alloc.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("%w: allocator invariants: %w", trace.ErrReplay, err)
	}
	return r, nil
}

// replayer is one replay: the program and options it runs, the Timeline and
// Allocator it drives, and its state in four named parts, each with the
// invariants its fields keep between steps. The parts are embedded, so
// their fields read as the replayer's.
type replayer struct {
	p     *trace.Program
	opts  Options
	tl    *sasync.Timeline
	alloc *subarena.Allocator

	times
	placed
	waitReuse
	tally
}

// times is the replay's simulated time: where the host is, when each engine
// is next free, and each op's submission, start and end. Times never go
// back: host only grows, and an op k submitted at submit[k] starts at
// start[k] >= submit[k], once its engine and its waits are done, and ends
// at end[k] >= start[k].
type times struct {
	host       int64   // host time
	engineFree []int64 // per engine: when its last op submitted ends
	// Per op: its Timeline event (zero until submitted) and its times
	// (0 until submitted).
	events             []sasync.Event
	submit, start, end []int64
	// pending holds the submitted ops not yet completed on the Timeline,
	// ordered by completion.less (the earliest end first).
	pending sweep.Heap[completion]
}

// placed is what the replay knows of each buffer (and view): its Allocator
// objects once placed, and the facts its placement decisions read. Per
// buffer b: bufs[b] is nil until b is placed (at its alloc step, or, with a
// donation planned in deferred[b], when the donation's op is submitted) and
// b's Allocator buffer from then on; points[b] and allocTime[b] are set at
// b's alloc step, to the point every user of b happens-after and the host
// time; donated[b] says bufs[b] came from a donation.
type placed struct {
	bufs       []*subarena.Buffer
	views      []*subarena.View
	points     []sasync.Point // allocation point recorded at each alloc step
	allocTime  []int64
	usesOf     [][]opUse      // per buffer: the ops using it
	userClocks []sasync.Clock // per op: everything that happens-before it (itself included)
	deferred   []Donation     // per buffer: the donation planned for it, if any
	donated    []bool         // per buffer: placed by donation
}

// waitReuse is the state of Options.WaitReuse, all nil without it:
// happens-before between ops, per engine the op of each submitted seq
// (opOfSeq[e][s] is the op submitted s-th on engine e), and per op the
// waits added to it.
type waitReuse struct {
	order      *trace.Order
	opOfSeq    [][]int
	addedWaits [][]int
}

// tally is what the replay reports (result): one StepRecord per step run,
// in step order, and the running counts.
type tally struct {
	steps    []StepRecord
	nDonated int   // buffers placed by donation so far
	pendPeak int64 // the most pending bytes at once so far
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

func newReplayer(p *trace.Program, opts Options) (*replayer, error) {
	if !opts.Policy.Valid() {
		return nil, fmt.Errorf("%w: policy %d", trace.ErrReplay, opts.Policy)
	}
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	a, err := subarena.New(subarena.Config{Granule: p.Trace.Granule, Policy: opts.Policy, Timeline: tl,
		Unbounded: true, Fit: opts.Fit})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", trace.ErrReplay, err)
	}
	n := len(p.Ops)
	r := &replayer{p: p, opts: opts, tl: tl, alloc: a,
		times: times{pending: sweep.NewHeap(completion.less), engineFree: make([]int64, len(p.Trace.Engines)),
			events: make([]sasync.Event, n), submit: make([]int64, n), start: make([]int64, n), end: make([]int64, n)},
		placed: placed{bufs: make([]*subarena.Buffer, len(p.Buffers)), views: make([]*subarena.View, len(p.Views)),
			points: make([]sasync.Point, len(p.Buffers)), allocTime: make([]int64, len(p.Buffers)),
			donated: make([]bool, len(p.Buffers))},
		tally: tally{steps: make([]StepRecord, 0, len(p.Trace.Steps))},
	}
	r.usesOf = p.UsesByBuffer()
	order, err := trace.NewOrder(p)
	if err != nil {
		return nil, err
	}
	r.userClocks = make([]sasync.Clock, n)
	for k := range p.Ops {
		if r.userClocks[k], err = order.Timeline.EventClock(order.Events[k]); err != nil {
			return nil, fmt.Errorf("%w: %w", trace.ErrReplay, err)
		}
	}
	r.deferred = planDonations(p, r.usesOf, order, opts.NoDonate)
	if opts.WaitReuse {
		r.order = order
		r.opOfSeq = make([][]int, len(p.Trace.Engines))
		r.addedWaits = make([][]int, n)
	}
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
