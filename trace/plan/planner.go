package plan

import (
	"fmt"
	"sync"
	"time"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/minimalloc"
)

// DefaultBudget is the budget the CLI gives Plan when none is named.
const DefaultBudget = 5 * time.Second

// searchBudget is the part of a Plan budget left for the search once
// elapsed has gone by, keeping reserve for what follows it (see
// prelude.reserve).
func searchBudget(budget, elapsed, reserve time.Duration) time.Duration {
	if budget <= 0 {
		return 0
	}
	return max(budget-elapsed-reserve, time.Millisecond)
}

// prelude is what Plan starts before a budgeted search, because it follows
// the search whatever the search finds: the online replay, and the safety
// check of the replay's plan. Timing that check tells how long the check of
// the planned placement will take, which the search must leave. Both run
// beside the planner, so that a replay slower than the budget (the
// Allocator's cost grows with what it tracks) neither delays the search nor
// outlasts the budget: finish waits for it only until the budget ends.
type prelude struct {
	done     chan struct{} // closed once the fields below are set
	stop     chan struct{} // closed to end the replay early
	stopOnce sync.Once
	replayed bool // rp and rerr hold the replay's answer
	rp       *trace.Plan
	rerr     error
	checked  bool // safe holds the check of the replay's plan
	safe     bool
	reserve  time.Duration
}

// newPrelude starts the replay (as opts asks) and the check of its plan and
// waits for them until half the budget since start has gone by. It sets the
// reserve: when the planner checks its own plan (opts.checks), twice the
// time that check took when it finished by then, or the tenth of the budget
// (at most 500 ms) otherwise; plus, always, a twentieth of the budget (at
// most 50 ms) for the rest of the work after the search.
func newPrelude(p *trace.Program, opts Options, start time.Time) *prelude {
	pre := &prelude{done: make(chan struct{}), stop: make(chan struct{})}
	if opts.checks() {
		pre.reserve = min(opts.Budget/10, 500*time.Millisecond)
	}
	var checkTime time.Duration
	p = p.Clone() // the planner goes on with p meanwhile
	go func() {
		defer close(pre.done)
		if opts.Replay != nil {
			pre.rp, pre.rerr = opts.Replay(p, pre.stop)
			pre.replayed = true
		}
		if pre.rp != nil { // checked whatever opts.Check: see finish
			t0 := time.Now()
			pre.safe = mustBeSafe(p, replayPlan(pre.rp)) == nil
			pre.checked = true
			checkTime = time.Since(t0)
		}
	}()
	if opts.Stop != nil {
		go func() {
			select {
			case <-opts.Stop:
				pre.cancel()
			case <-pre.done:
			}
		}()
	}
	wait := time.NewTimer(time.Until(start.Add(opts.Budget / 2)))
	defer wait.Stop()
	select {
	case <-pre.done:
		if pre.checked && opts.checks() {
			pre.reserve = 2 * checkTime
		}
	case <-wait.C: // the replay goes on beside the search
	}
	pre.reserve += min(opts.Budget/20, 50*time.Millisecond)
	return pre
}

// cancel ends the replay at its next step.
func (pre *prelude) cancel() { pre.stopOnce.Do(func() { close(pre.stop) }) }

// wait waits for the replay and the check of its plan until deadline or
// until stop is closed, and reports whether they finished; if not, it ends
// the replay.
func (pre *prelude) wait(deadline time.Time, stop <-chan struct{}) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-pre.done:
		return true
	case <-t.C:
	case <-stop:
	}
	select { // both may be ready: a finished replay counts
	case <-pre.done:
		return true
	default:
	}
	pre.cancel()
	return false
}

// replayPlan is the replay's plan as Plan offers it, its LowerBound the replay's
// (a bound valid for the replay's plan, or 0 when the replay computed none).
func replayPlan(rp *trace.Plan) *trace.Plan {
	out := *rp
	out.Policy = "replay"
	out.LowerBound = max(out.LowerBound, 0)
	if out.LowerBound > out.Size {
		out.LowerBound = 0 // not a bound of a plan it exceeds
	}
	return &out
}

// ReplayFunc runs an online allocator over p's host program and returns the
// plan it made, whose Size is the allocator's high-water mark and whose
// LowerBound, when not 0, is a height no plan of p with the in-place
// placements the allocator may make is below. Closing stop ends it early
// with an error matching trace.ErrStopped. replay.Online (package
// trace/replay) is the root package's Allocator replayed; its LowerBound is
// LiveLB (check.LiveLowerBound) on the schedule it simulated.
type ReplayFunc func(p *trace.Program, stop <-chan struct{}) (*trace.Plan, error)

// Options tunes Plan. The zero value places with the greedy variants only,
// in place where it can, and returns the plan unchecked (see Check); with
// Replay set, Plan keeps the online replay's plan if it is lower and the
// checker accepts it.
type Options struct {
	// Budget bounds the whole planning time, most of which goes to the
	// search below the best greedy placement (see SolveOptions.Budget).
	// Plan starts the online replay and the check of its plan first, beside
	// the planner, and waits for them until half the budget; the search
	// then leaves twice that check's time for the check of the plan it
	// finds (see Check). A replay not finished when the budget ends is
	// abandoned (its stop closed: replay.Watch reports an error matching
	// trace.ErrStopped), so a replay slower than the planner does not
	// stretch the budget. Zero means greedy only, without that prelude: the
	// replay then runs after the greedy placement, to its end. Negative is
	// an error. The planner's own work before the search (resolving,
	// in-place decisions, deriving the problem, the greedy start) and the
	// final check (see Check) are not cut short: with a budget smaller
	// than them, the search gets a millisecond.
	Budget time.Duration
	// NoInPlace places every buffer on its own bytes.
	NoInPlace bool
	// NoRelayout keeps in-place placement to dense read views, so the plan
	// has offsets only (no placements).
	NoRelayout bool
	// Replay is the online replay Plan compares its plan with (see
	// ReplayFunc); nil skips the comparison. Plan runs it beside its own
	// work within the one budget and keeps its plan when lower and safe
	// (Result.Method "online replay"): the replay's plan is always run
	// through check.Plan before it is kept, whatever Check says. The
	// replay's own figures are the caller's, through the function it
	// passes (replay.Watch).
	Replay ReplayFunc
	// Check runs the full safety check (check.Plan, package trace/check)
	// on the planner's own plan before Plan returns it, and fails the call
	// if the checker rejects it (an unsafe placement: an error matching
	// ErrConflict). The planner's plans pass it by construction, so
	// production callers leave it off: the check is O(R log R) in the byte
	// runs of the trace's uses (package trace/check, "Costs") and
	// allocates, and on ggml-tiny it takes about six times as long as the
	// plan (1.15 ms against 0.17 ms per plan, 2,710 allocations against
	// 201: go test ./trace/plan -run '^$' -bench 'PlanGGMLTinyFromTrace'
	// on a 2-core Xeon). Tests turn it on; a build with the invariants tag
	// (internal/invariants) runs it on every plan whatever Check says.
	Check bool
	// Stop, when closed, ends the search early.
	Stop <-chan struct{}
	// Scratch, when not nil, is the memory planning reuses from plan to
	// plan (see Scratch).
	Scratch *Scratch
}

// Result is the planner's answer: a plan, its bounds and its proof, and
// how long it took. What Plan compared it with stays with the caller that
// asked for the comparison: the online replay's figures with the
// ReplayFunc it passed (replay.Watch in package trace/replay), the input
// order's plan and the reorderings' with PlanReordered's answer.
type Result struct {
	// Plan places every alloc buffer of Trace; Plan.Size is its high-water
	// mark. A buffer placed in place over a strided footprint has a
	// placement (Plan.Placements) instead of an offset.
	Plan *trace.Plan
	// Trace is the trace Plan is for: the input, or a reordering of it
	// (Reordered.Reordering).
	Trace *trace.Trace
	// Relaid names the buffers with placements, in buffer order.
	Relaid []string
	// InPlace counts buffers placed over a dying read view (relaid included).
	InPlace int
	// LowerBound is a height no plan for Trace with these in-place
	// placements is below (Solution.LowerBound): the most bytes live at
	// once under the planner's liveness and in-place choices (LiveBound),
	// or, when larger, the hole bound, which counts the span an item with
	// holes pins at some time with the live runs that cannot hide in its
	// holes. Proven says Plan.Size reaches it or the search showed nothing
	// lower exists.
	LowerBound int64
	LiveBound  int64
	Proven     bool
	// With the online replay's plan (Method "online replay"), LowerBound is
	// the replay's bound (LiveLB on its schedule for replay.Online), or the
	// planner's when larger and the trace has no inplace op, so that no plan
	// is placed in place; Proven then says Plan.Size equals it. LiveBound
	// stays the planner's.
	//
	// Method names what produced the plan: a greedy variant, the search, or
	// the online replay.
	Method string
	// FirstPlan is the time from the start of planning to the first
	// placement of the derived problem (the best greedy one, valid by
	// construction; the final check, when Options.Check, runs once, on the
	// plan returned); Elapsed is the whole planning time, search, replay
	// comparison and checks included.
	FirstPlan time.Duration
	Elapsed   time.Duration

	// bound is the planner's lower bound, kept when the replay's plan
	// replaces the planner's (LowerBound is then the replay's).
	bound int64
}

// Plan places the buffers of t offline, knowing every future use: it
// derives subrange lifetimes and in-place placements from the trace, solves
// the placement problem (greedy, then search within opts.Budget), and
// returns the lower of that plan and the online replay's. The plan passes
// check.Plan for t: a replay's plan is always checked before it is kept,
// the planner's own when opts.Check (or under the invariants tag).
func Plan(t *trace.Trace, opts Options) (Result, error) {
	start := time.Now()
	if t == nil {
		return Result{}, fmt.Errorf("nil trace: %w", ErrInvalidTrace)
	}
	p, err := t.Resolve()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidTrace, err)
	}
	return planFixed(p, opts, start)
}

// PlanProgram is Plan for a trace already resolved: the planner's own work
// on a graph it is handed, as a graph allocator plans a built graph.
func PlanProgram(p *trace.Program, opts Options) (Result, error) {
	if p == nil || p.Trace == nil {
		return Result{}, fmt.Errorf("nil program: %w", ErrInvalidTrace)
	}
	return planFixed(p, opts, time.Now())
}

func planFixed(p *trace.Program, opts Options, start time.Time) (Result, error) {
	t := p.Trace
	if opts.Budget < 0 {
		return Result{}, fmt.Errorf("budget %v: %w", opts.Budget, ErrInvalidOptions)
	}
	hb, order, err := relation(p)
	if err != nil {
		return Result{}, err
	}
	isc := opts.Scratch.getInplace()
	ip := newInplacerIn(p, hb, !opts.NoRelayout, isc)
	ip.order, ip.scratch = order, opts.Scratch
	defer func() {
		ip.keep(isc)
		opts.Scratch.putInplace(isc)
	}()
	if !opts.NoInPlace {
		ip.decide()
	}
	sol, coarse, ok := coarseStart(ip)
	d := coarse
	defer coarse.release()
	firstPlan := time.Since(start)
	var pre *prelude
	if !ok {
		d = deriveFrom(ip, coarse)
		defer d.release()
		so := SolveOptions{Stop: opts.Stop}
		if opts.Budget > 0 && d.dense == nil {
			pre = newPrelude(p, opts, start)
			so.Budget = searchBudget(opts.Budget, time.Since(start), pre.reserve)
		}
		solveStart := time.Since(start)
		if d.dense != nil {
			sol, err = solveDense(d.prob, d.dense)
		} else {
			sol, err = Solve(d.prob, so)
		}
		if err != nil {
			if pre != nil {
				pre.cancel()
			}
			return Result{}, err
		}
		firstPlan = solveStart + sol.FirstAt
	}
	out := &trace.Plan{Trace: t.Name, Offsets: make(map[string]int64, len(p.Buffers)),
		Policy: "plan", LowerBound: sol.LowerBound}
	inPlace := 0
	var relaid []string
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		pl := ip.place[b]
		if pl.root != b {
			inPlace++
		}
		if buf.External {
			continue
		}
		if pl.relaid {
			if out.Placements == nil {
				out.Placements = map[string]trace.Placement{}
			}
			out.Placements[buf.Name] = trace.PlacementOf(p.Buffers[pl.root].Name, pl.layout)
			relaid = append(relaid, buf.Name)
			continue
		}
		off := sol.Offsets[d.itemOf[b]] + d.shift[b]
		out.Offsets[buf.Name] = off
		out.Size = max(out.Size, off+buf.Size)
	}
	res := Result{Plan: out, Trace: t, Relaid: relaid, InPlace: inPlace, LowerBound: sol.LowerBound,
		LiveBound: sol.LiveBound, Proven: sol.Proven, Method: sol.Method, FirstPlan: firstPlan, bound: sol.LowerBound}
	if err := finish(&res, p, opts, pre, start); err != nil {
		return Result{}, err
	}
	res.Elapsed = time.Since(start)
	res.Plan.Ms = float64(res.Elapsed.Microseconds()) / 1000
	return res, nil
}

// finish checks the planned result (when opts.checks) and replaces it with
// the online replay's plan of p when that is lower and safe. pre, when not
// nil, holds the replay and the check of its plan, started before the
// search, which finish waits for until the budget since start ends.
func finish(res *Result, p *trace.Program, opts Options, pre *prelude, start time.Time) error {
	if opts.checks() {
		if err := mustBeSafe(p, res.Plan); err != nil {
			if pre != nil {
				pre.cancel()
			}
			return err
		}
	}
	if opts.Replay == nil {
		return nil
	}
	if pre != nil && !pre.wait(start.Add(opts.Budget), opts.Stop) {
		return nil // given up: the replay's caller learns it from its closed stop
	}
	var (
		rp  *trace.Plan
		err error
	)
	if pre != nil && pre.replayed {
		rp, err = pre.rp, pre.rerr
	} else {
		rp, err = opts.Replay(p, nil)
	}
	if err != nil || rp == nil {
		return nil // the plan is the planner's own
	}
	if rp.Size >= res.Plan.Size {
		return nil
	}
	rp = replayPlan(rp)
	// The replay's plan is taken only if the checker accepts it, whatever
	// opts.Check: the replay is another allocator, whose plan nothing here
	// vouches for.
	safe := false
	if pre != nil && pre.checked {
		safe = pre.safe
	} else {
		safe = mustBeSafe(p, rp) == nil
	}
	if !safe {
		return nil // lower, but the checker rejects it
	}
	res.Plan, res.Relaid, res.Method, res.InPlace = rp, nil, "online replay", 0
	res.LowerBound = replayBound(p, rp, res.bound)
	rp.LowerBound = res.LowerBound
	res.Proven = res.LowerBound > 0 && rp.Size == res.LowerBound
	return nil
}

// checks reports whether Plan runs check.Plan on its own plan: when
// opts.Check asks, and always under the invariants build tag.
func (o *Options) checks() bool { return o.Check || invariants.Enabled }

// replayBound is the lower bound Plan reports with the replay's plan rp of p:
// the replay's own (LiveLB for replay.Online), raised to the planner's bound
// when p has no inplace op. Then no plan places a buffer in place, the
// replay's included, and the planner's bound, which holds for every plan
// with its in-place placements (none), holds for rp. With inplace ops the
// planner's bound is for its own in-place placements, which the replay's may
// beat, so only the replay's is kept. A bound above rp.Size is none (0).
func replayBound(p *trace.Program, rp *trace.Plan, planner int64) int64 {
	lb := rp.LowerBound
	if !hasInplace(p) {
		lb = max(lb, planner)
	}
	if lb > rp.Size {
		return 0
	}
	return lb
}

// hasInplace reports whether some op of p is inplace.
func hasInplace(p *trace.Program) bool {
	for k := range p.Ops {
		if p.Ops[k].InPlace {
			return true
		}
	}
	return false
}

// PlanMiniMalloc plans a MiniMalloc problem as Plan plans the trace its
// importer makes (mm.Trace(name)), but solves it on MiniMalloc's own time
// axis: the search's preorders weigh lifetimes by their length in the
// CSV's time units, which importing compresses away. Gaps are ignored, as
// the importer ignores them (a plan safe without them is safe with them).
func PlanMiniMalloc(mm *minimalloc.CSV, name string, opts Options) (Result, error) {
	start := time.Now()
	if mm == nil {
		return Result{}, fmt.Errorf("nil problem: %w", ErrInvalidTrace)
	}
	if opts.Budget < 0 {
		return Result{}, fmt.Errorf("budget %v: %w", opts.Budget, ErrInvalidOptions)
	}
	t, err := mm.Trace(name)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidTrace, err)
	}
	p, err := t.Resolve()
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrInvalidTrace, err)
	}
	prob := &Problem{Align: t.Granule}
	for _, b := range mm.Buffers {
		prob.Items = append(prob.Items, Whole(b.ID, b.Size, Time(b.Lower), Time(b.Upper)))
	}
	so := SolveOptions{Stop: opts.Stop}
	var pre *prelude
	if opts.Budget > 0 {
		pre = newPrelude(p, opts, start)
		so.Budget = searchBudget(opts.Budget, time.Since(start), pre.reserve)
	}
	solveStart := time.Since(start)
	sol, err := Solve(prob, so)
	if err != nil {
		if pre != nil {
			pre.cancel()
		}
		return Result{}, err
	}
	out := &trace.Plan{Trace: t.Name, Size: sol.Height, Offsets: make(map[string]int64, len(mm.Buffers)),
		Policy: "plan", LowerBound: sol.LowerBound}
	for i, b := range mm.Buffers {
		out.Offsets[b.ID] = sol.Offsets[i]
	}
	res := Result{Plan: out, Trace: t, LowerBound: sol.LowerBound, LiveBound: sol.LiveBound, Proven: sol.Proven,
		Method: sol.Method, FirstPlan: solveStart + sol.FirstAt}
	if err := finish(&res, p, opts, pre, start); err != nil {
		return Result{}, err
	}
	res.Elapsed = time.Since(start)
	res.Plan.Ms = float64(res.Elapsed.Microseconds()) / 1000
	return res, nil
}

// mustBeSafe runs the checker (package trace/check) on a plan the planner made.
func mustBeSafe(p *trace.Program, pl *trace.Plan) error {
	rep, err := check.Plan(p, pl)
	if err != nil {
		return fmt.Errorf("internal: plan does not fit its trace: %w", err)
	}
	if !rep.Safe {
		return fmt.Errorf("internal: planned placement is unsafe: %s: %w", rep.Violations[0].String(), ErrConflict)
	}
	return nil
}

// happensBefore returns the happens-before relation of p's ops: op order on
// one engine, the trace package's Order otherwise.
func happensBefore(p *trace.Program) (func(a, b int) bool, error) {
	hb, _, err := relation(p)
	return hb, err
}

// relation is happensBefore with the Order it answers from (nil on one
// engine).
func relation(p *trace.Program) (func(a, b int) bool, *trace.Order, error) {
	if len(p.Trace.Engines) == 1 {
		return func(a, b int) bool { return a < b }, nil, nil
	}
	o, err := trace.NewOrder(p)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidTrace, err)
	}
	return o.HappensBefore, o, nil
}

// coarseStart tries the cheap greedy start on one engine: the greedy
// variants on deriveCoarse's problem, whose windows run on to each byte's
// release. derive's problem cuts a window at the byte's last use and
// lists the conflicts that cut would lose; when many bytes die before
// their release it has many short pieces and costs several times more to
// solve. Every window of derive's problem lies within the coarse one's, so
// a coarse placement is valid for it (Plan's check runs on the result as
// on any plan, and TestCoarseStartAgreesWithSolve verifies it), and if its
// height already meets the coarse derivation's shortLB, a lower bound of
// derive's problem, no placement is lower and it is the answer. It reports
// false otherwise, with the coarse derivation (nil on several engines),
// whose segments the caller's derivation of the fine problem reuses
// (deriveFrom) before solving it.
func coarseStart(ip *inplacer) (Solution, *derived, bool) {
	if len(ip.p.Trace.Engines) != 1 {
		return Solution{}, nil, false // windows are cut at last use on one engine only
	}
	c := deriveCoarse(ip)
	// Every height is a multiple of the alignment and item sizes' gcd.
	g := c.prob.align()
	for _, it := range c.prob.Items {
		g = gcd(g, it.Size)
	}
	sol, err := Solve(c.prob, SolveOptions{})
	if err != nil || sol.Height > alignUp(c.shortLB, g) {
		return Solution{}, c, false
	}
	sol.LowerBound, sol.LiveBound, sol.Proven = c.shortLB, c.shortLB, true
	return sol, c, true
}
