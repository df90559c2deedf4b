package fuzz

import (
	"fmt"

	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// Result is what one run of a program under one interleaving found.
type Result struct {
	Policy      subarena.Policy
	Failure     *Failure // nil when every check passed
	HostSteps   int      // host steps executed (retries included)
	Completions int      // ops completed
	Choices     int      // decisions with more than one option
	Waits       int      // host steps retried after ErrNoSpace or ErrPending
	Rejected    int      // uses rejected with ErrUnordered (the ops did nothing)
	ClaimsLost  int      // claims refused with ErrPending
	Stuck       bool     // the host could not go on: no space and nothing pending
	Reads       int      // bytes whose expected writer was checked
	WaitReuse   int      // with RunOptions.MayWait: allocs that took bytes a user not ordered before them still pinned

	// placements hashes the offsets every Alloc and Donate got, in order:
	// two runs with the same placements made the same decisions.
	placements uint64
}

// Run executes p against a fresh Allocator with the given policy and []byte
// backing, taking the interleaving from sched, and checks everything the
// run lets it check (see the package documentation). It stops at the first
// failure, which it returns in Result.Failure with a full report. A
// malformed program is a FailSetup failure wrapping ErrMalformed.
func Run(p *Program, policy subarena.Policy, sched Scheduler) Result {
	return RunWith(p, policy, sched, RunOptions{})
}

// RunOptions tune a run.
type RunOptions struct {
	// EagerHost runs a host step that commutes with completions — Submit
	// (with its Uses) and HostSync — as soon as it is next, instead of
	// offering completions before it. Completing another op before or after
	// such a step leaves the Allocator in the same state (a Use pins bytes
	// the program holds, which no completion can return; a host sync only
	// orders later ops), so an exhaustive enumeration loses no outcome, and
	// has far fewer interleavings to run.
	EagerHost bool
	// HostFirst runs the host's next step whenever it can go, without
	// asking the scheduler: completions happen only while the host waits
	// (for space, for a donation's bytes, at a host sync) or after its last
	// step, and the scheduler chooses only which ready op completes next.
	// Every completion order consistent with FIFO engines, waits and host
	// syncs remains reachable, with one host timing each — the one where
	// every host call sees as few completions as the order allows — as long
	// as the host never waits for space or for a donation's bytes (a wait
	// orders the ops submitted after it behind the completions that end
	// it). Explore's Orders mode enumerates these runs.
	HostFirst bool
	// MayWait allocates with subarena.AllocOptions.MayWait accepting every
	// event, so the fenced policies also take held bytes whose pending
	// users are not ordered before the point, and submits every op with
	// waits for the users its buffers were handed over from (as an engine
	// calling AllocWith waits on Buffer.AppendWaits). The model checks that
	// the Allocator's waits cover every such user, and the reads check what
	// reuse before completion would break.
	MayWait bool
	// checkFrom skips the per-step invariant checks until this many
	// decisions have been taken: an exhaustive enumeration replays a prefix
	// it has already checked, step for step, in the previous run.
	checkFrom int
}

// RunWith is Run with options. Failure.Options records them: a failure
// replays with RunWith(f.Program, f.Policy, &ReplayScheduler{Choices:
// f.Choices}, f.Options).
func RunWith(p *Program, policy subarena.Policy, sched Scheduler, opt RunOptions) Result {
	return runWith(p, policy, sched, opt, nil)
}

// runWith is RunWith, handing the finished Sim to visit (when not nil).
func runWith(p *Program, policy subarena.Policy, sched Scheduler, opt RunOptions, visit func(*Sim)) Result {
	s, err := NewSim(p, policy, sched)
	if err != nil {
		return Result{Policy: policy, Failure: &Failure{Kind: FailSetup, Detail: err.Error(), Program: p, Policy: policy}}
	}
	s.opt = opt
	for s.Step() {
	}
	s.Close()
	if visit != nil {
		visit(s)
	}
	return s.Result()
}

// completionOrder returns the ops in the order they completed.
func (s *Sim) completionOrder() []int {
	var out []int
	for _, l := range s.log {
		if !l.host && l.note == "" {
			out = append(out, l.op)
		}
	}
	return out
}

// simBuf is one program buffer as the simulator knows it.
type simBuf struct {
	b       *subarena.Buffer
	off     int64
	size    int64
	mem     []byte  // Bytes(), captured when the buffer appears
	lastW   []int32 // program semantics: op+1 of the last write to each byte
	dead    []bool  // discarded, committed-claimed or donated bytes
	held    bool    // the program holds it (not released)
	residue vclock  // the fence it was handed over with, as the model computes it
	// residueOps are the ops whose pending uses it was handed over with
	// (RunOptions.MayWait: every op using the buffer waits for them).
	residueOps []int
}

// readCheck is one read use of an op: the bytes it reads and who must have
// written each one.
type readCheck struct {
	use    int
	buf    int
	bytes  []int32 // buffer bytes
	expect []int32 // op+1, 0 for never written (unchecked)
}

// writeSet is one write use of an op.
type writeSet struct {
	buf   int
	bytes []int32
}

type simOp struct {
	ev        sasync.Event
	clock     vclock
	submitted bool
	completed bool
	rejected  bool
	reads     []readCheck
	writes    []writeSet
}

// pin is one user the Allocator should be indexing: a use by a pending op,
// or an outstanding reservation.
type pin struct {
	op     int // -1 for a reservation
	res    int
	active bool
	lo, hi int64   // arena bounds of bytes
	bytes  []int64 // arena bytes
}

// logEntry is one event of the interleaving, formatted only on failure.
type logEntry struct {
	host   bool
	step   int
	op     int
	note   string
	retry  bool
	val    int64 // the offset an alloc or donation got
	hasVal bool
}

// Sim is one run of a program against a real Allocator, one decision at a
// time: Step lets the scheduler pick the next event (a host step or a
// completion), performs it, and checks every invariant. It is not safe for
// concurrent use.
//
// Its state comes in named parts, each with the invariants its fields keep
// between steps; the parts are embedded, so their fields read as the Sim's.
type Sim struct {
	p     *Program
	pol   subarena.Policy
	sched Scheduler
	opt   RunOptions
	// skipResidueWaits (tests only) submits ops without the waits
	// RunOptions.MayWait adds, to show that Use then refuses them.
	skipResidueWaits bool

	simReal
	simModel
	simHost
	simTrail
	simScratch
}

// simReal is the real system under test: the Timeline with one engine per
// program engine (eng[e] is engine e's ID), and the Allocator over mem, a
// backing of p.Capacity bytes. stamp has one entry per arena byte: op+1 of
// the last op whose completion wrote it through mem (0: none yet), which a
// read checks, with the byte mem holds, against the model's expected
// writer.
type simReal struct {
	tl    *sasync.Timeline
	a     *subarena.Allocator
	eng   []sasync.EngineID
	mem   []byte
	stamp []int32
}

// simModel is the program's state as the model computes it, independently
// of the Allocator: per buffer, view, op and reservation of p (indexed as
// in p), the users the Allocator should be indexing (the active pins:
// every use of a submitted, not completed op and every outstanding
// reservation; inactive ones are dropped users kept until the list is
// pruned), the happens-before order of what was submitted
// (ord), and per engine the ops completed (doneSeq[e]: engines complete in
// FIFO order, so the first doneSeq[e] ops submitted on e). CheckInvariants
// compares it with the Allocator and the Timeline.
type simModel struct {
	bufs    []simBuf
	views   []*subarena.View
	ops     []simOp
	resv    []*subarena.Reservation
	pins    []pin
	ord     ordering
	doneSeq [MaxEngines]uint32
}

// simHost is the host's progress through p.Steps: every step before next
// has run. waiting says the step at next failed for want of space or of
// completions and waits for one; retrying that a completion came since, so
// the step at next runs again; noSpace that the step at next waits because
// an Alloc found no space.
type simHost struct {
	next     int
	waiting  bool
	retrying bool
	noSpace  bool
}

// simTrail is what the run reports: the interleaving so far (log, one
// entry per event, formatted only on failure), the scheduler's decisions
// (choices: replaying them repeats the run), the result, a broken rule
// with no wrong read yet (deferred: reported at the end unless a failure
// follows), and done once the run is over.
type simTrail struct {
	log      []logEntry
	choices  []int
	res      Result
	deferred *Failure
	done     bool
}

// simScratch is memory reused from step to step, holding nothing between
// them: the choices offered to the scheduler, and CheckInvariants' per-byte
// owner and covered tables (allocated on first use).
type simScratch struct {
	opts    []Choice
	owner   []int32
	covered []bool
}

// NewSim prepares a run of p under policy with interleavings from sched.
// It fails with ErrMalformed (p.Validate) or the Allocator's
// ErrInvalidConfig.
func NewSim(p *Program, policy subarena.Policy, sched Scheduler) (*Sim, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if sched == nil {
		sched = &ReplayScheduler{}
	}
	s := &Sim{p: p, pol: policy, sched: sched}
	s.tl = sasync.NewTimeline()
	s.res.Policy = policy
	for e := 0; e < p.Engines; e++ {
		id, err := s.tl.AddEngine(fmt.Sprintf("e%d", e), sasync.Compute)
		if err != nil {
			return nil, err
		}
		s.eng = append(s.eng, id)
	}
	s.mem = make([]byte, p.Capacity)
	s.stamp = make([]int32, p.Capacity)
	a, err := subarena.New(subarena.Config{Capacity: p.Capacity, Granule: p.Granule, Policy: policy, Backing: s.mem, Timeline: s.tl})
	if err != nil {
		return nil, err
	}
	s.a = a
	s.bufs = make([]simBuf, len(p.Bufs))
	s.views = make([]*subarena.View, len(p.Views))
	s.ops = make([]simOp, len(p.Ops))
	s.resv = make([]*subarena.Reservation, p.Reservations)
	return s, nil
}

// Step performs one event of the run — the next host step or one op's
// completion, as the scheduler chooses — and checks every invariant after
// it. It returns false once the run is over: the program ended, the host
// got stuck, or a check failed (see Result).
func (s *Sim) Step() bool {
	if s.done {
		return false
	}
	opts := s.options()
	if len(opts) == 0 {
		if s.next < len(s.p.Steps) {
			s.stuck()
		} else {
			s.finish()
		}
		s.end()
		return false
	}
	c := 0
	if len(opts) > 1 {
		c = s.sched.Choose(opts)
		if c < 0 || c >= len(opts) {
			c = 0
		}
		s.choices = append(s.choices, c)
		s.res.Choices++
	}
	if opts[c].Host {
		s.hostStep()
	} else {
		s.complete(opts[c].Op)
	}
	if s.res.Failure == nil && len(s.choices) >= s.opt.checkFrom {
		s.checkStep()
	}
	if s.res.Failure != nil {
		s.end()
		return false
	}
	return true
}

// end closes the run: a rule broken without a wrong read is reported now.
func (s *Sim) end() {
	s.done = true
	if s.res.Failure == nil && s.deferred != nil {
		s.fillFailure(s.deferred)
		s.res.Failure = s.deferred
	}
}

// Result returns what the run found so far.
func (s *Sim) Result() Result { return s.res }

// Close detaches the Allocator from the Timeline.
func (s *Sim) Close() { s.a.Close() }

// options lists the enabled choices: the host (unless it is waiting for a
// completion, or for the op it host-syncs on), then every ready op — one
// whose engine has completed every earlier op and whose waits have all
// completed — in submission order.
func (s *Sim) options() []Choice {
	opts := s.opts[:0]
	if s.next < len(s.p.Steps) && !s.waiting {
		st := &s.p.Steps[s.next]
		if st.Kind != StepHostSync || s.ops[st.Op].completed {
			opts = append(opts, Choice{Host: true})
			if s.opt.HostFirst || (s.opt.EagerHost && (st.Kind == StepSubmit || st.Kind == StepHostSync)) {
				s.opts = opts
				return opts
			}
		}
	}
	var seen [MaxEngines]bool
	for i := range s.ops {
		o := &s.ops[i]
		if !o.submitted || o.completed {
			continue
		}
		e := s.p.Ops[i].Engine
		if seen[e] {
			continue // not the oldest pending op of its engine
		}
		seen[e] = true
		if s.depsDone(i) {
			opts = append(opts, Choice{Op: i, Engine: e})
		}
	}
	s.opts = opts
	return opts
}

// depsDone reports whether every op that op's clock covers (other than op
// itself) has completed: engines complete in order, so it is enough that
// each engine has completed through the clock's component.
func (s *Sim) depsDone(op int) bool {
	c := s.ops[op].clock
	c[s.p.Ops[op].Engine]--
	for e := 0; e < s.p.Engines; e++ {
		if s.doneSeq[e] < c[e] {
			return false
		}
	}
	return true
}

// stuck records that the host waits for space that no pending op can free.
func (s *Sim) stuck() {
	s.res.Stuck = true
	if !s.pol.Safe() {
		return // ignoring users, the unsafe policy can hand out reserved bytes and wait forever
	}
	for i := range s.pins {
		if s.pins[i].active && s.pins[i].op >= 0 {
			s.fail(FailOracle, "the host is stuck at step %d while o%d is pending", s.next, s.pins[i].op)
			return
		}
	}
	if !s.noSpace {
		// Only space may run out for good; a step waiting on pending
		// users with nothing pending is a wrong answer.
		s.fail(FailOracle, "the host is stuck at step %d (%s) with nothing pending", s.next, s.p.StepString(s.next))
	}
}

// finish checks the end state: with every op complete and every buffer
// released, the arena must be whole again.
func (s *Sim) finish() {
	for i := range s.ops {
		if !s.ops[i].completed {
			s.fail(FailOracle, "op o%d never completed", i)
			return
		}
	}
	st := s.a.Stats()
	if st.Buffers != 0 || st.Users != 0 || st.Held != 0 || st.InUse != 0 || st.Free != s.p.Capacity {
		s.fail(FailOracle, "at the end: %d buffers, %d users, %d held, %d in use, %d of %d free",
			st.Buffers, st.Users, st.Held, st.InUse, st.Free, s.p.Capacity)
	}
}

func (s *Sim) fail(kind FailKind, format string, args ...any) {
	if s.res.Failure != nil {
		return
	}
	s.res.Failure = s.newFailure(kind, fmt.Sprintf(format, args...))
}

// breach records a broken rule (a use accepted that the reuse rule forbids,
// bytes handed over too early) without stopping the run, so that the wrong
// read it leads to, if any, is what gets reported.
func (s *Sim) breach(format string, args ...any) {
	if s.deferred == nil {
		s.deferred = s.newFailure(FailRule, fmt.Sprintf(format, args...))
	}
}
