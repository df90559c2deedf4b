package check_test

// The checker, LiveLowerBound and trace.LetGo on the plans and schedules the replay makes:
// these tests drive the Allocator through package trace/replay, which imports this one, so
// they are external and reach the package's own test helpers through export_test.go.

import (
	"fmt"
	"math/rand/v2"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/replay"
)

// TestReplayCheckAgainstOracles replays random traces under every policy and compares
// Plan with a byte-by-byte checker and LiveLowerBound with a granule-by-granule one; every
// plan of a safe policy must be safe and at least LiveLB.
func TestReplayCheckAgainstOracles(t *testing.T) {
	n := testutil.Count(150, 30)
	rng := rand.New(rand.NewPCG(1, 2))
	unsafeSeen := 0
	rules := map[string]int{}
	for i := 0; i < n; i++ {
		tr := tracetest.RandomTrace(rng, 10+rng.IntN(40))
		p, err := tr.Resolve()
		if err != nil {
			t.Fatalf("trace %d: generated trace invalid: %v\n%s", i, err, trace.Marshal(tr))
		}
		again, err := trace.Parse(trace.Marshal(tr))
		if err != nil || !again.Equal(tr) {
			t.Fatalf("trace %d: round trip: %v", i, err)
		}
		if err := p.CheckInvariants(); err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		m := check.BuildOracle(tr)
		// Random plans (overlapping freely) reach every rule of the checker.
		for j := 0; j < 3; j++ {
			plan := &trace.Plan{Trace: tr.Name, Offsets: map[string]int64{}}
			for _, b := range p.Buffers {
				if !b.External {
					off := rng.Int64N(48)
					plan.Offsets[b.Name] = off
					plan.Size = max(plan.Size, off+b.Size)
				}
			}
			rep, err := check.Plan(p, plan)
			if err != nil {
				t.Fatalf("trace %d: check of a random plan: %v", i, err)
			}
			if got, want := check.CheckKeys(rep), check.BruteCheck(m, plan); !check.EqualKeys(got, want) {
				t.Fatalf("trace %d: random plan %v: check disagrees with the oracle\ngot  %v\nwant %v\n%s",
					i, plan.Offsets, got, want, trace.Marshal(tr))
			}
			for _, v := range rep.Violations {
				rules[v.Rule]++
			}
		}
		for _, pol := range subarena.Policies() {
			res, err := replay.Run(p, replay.Options{Policy: pol, CheckInvariants: true})
			if err != nil {
				t.Fatalf("trace %d %v: replay: %v\n%s", i, pol, err, trace.Marshal(tr))
			}
			rep, err := check.Plan(p, res.Plan)
			if err != nil {
				t.Fatalf("trace %d %v: check: %v", i, pol, err)
			}
			want := check.BruteCheck(m, res.Plan)
			if got := check.CheckKeys(rep); !check.EqualKeys(got, want) {
				t.Fatalf("trace %d %v: check disagrees with the oracle\ngot  %v\nwant %v\n%s", i, pol, got, want, trace.Marshal(tr))
			}
			if pol.Safe() && !rep.Safe {
				t.Fatalf("trace %d %v: plan of a safe policy is unsafe: %v\n%s", i, pol, rep.Violations[0].String(), trace.Marshal(tr))
			}
			if !rep.Safe {
				unsafeSeen++
			}
			s := replayedSchedule(res)
			if lb := check.BruteLiveLB(m, s.Start, s.End, s.Makespan); lb != res.LiveLB {
				t.Fatalf("trace %d %v: LiveLB %d, oracle %d\n%s", i, pol, res.LiveLB, lb, trace.Marshal(tr))
			}
			if err := p.CheckInvariants(); err != nil {
				t.Fatalf("trace %d %v: after replay and check: %v", i, pol, err)
			}
			for _, v := range rep.Violations {
				rules[v.Rule]++
			}
			if pol.Safe() && res.LiveLB > res.HWM {
				t.Fatalf("trace %d %v: LiveLB %d above HWM %d", i, pol, res.LiveLB, res.HWM)
			}
		}
	}
	for _, r := range []string{check.ViolationUnordered, check.ViolationSameOp, check.ViolationHeld} {
		if rules[r] == 0 {
			t.Fatalf("no %q violation seen: the generator does not exercise that rule", r)
		}
	}
	if unsafeSeen == 0 {
		t.Fatalf("no ir-order plan was unsafe: the generator does not exercise the checker")
	}
	t.Logf("%d unsafe ir-order plans among %d traces; violations by rule: %v", unsafeSeen, n, rules)
}

// TestCheckSweepMatchesPairwise: on random traces, with random offsets, random
// placements and every policy's replay plan, Plan reports exactly what the pairwise
// checker reports.
func TestCheckSweepMatchesPairwise(t *testing.T) {
	n := testutil.Count(400, 60)
	rng := rand.New(rand.NewPCG(11, 12))
	rules := map[string]int{}
	plans := 0
	for i := 0; i < n; i++ {
		p := tracetest.Resolve(t, tracetest.RandomTrace(rng, 10+rng.IntN(120)))
		for j := 0; j < 4; j++ {
			var plan *trace.Plan
			switch j {
			case 0:
				plan = check.DenseOffsets(rng, p, 16)
			case 1:
				plan = check.DenseOffsets(rng, p, 64)
			default:
				plan = check.RandomPlacements(rng, p)
			}
			rep := check.SameReport(t, fmt.Sprintf("trace %d plan %d", i, j), p, plan)
			if rep != nil {
				plans++
				for _, v := range rep.Violations {
					rules[v.Rule]++
				}
			}
		}
		for _, pol := range subarena.Policies() {
			res, err := replay.Run(p, replay.Options{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			check.SameReport(t, fmt.Sprintf("trace %d %v", i, pol), p, res.Plan)
		}
	}
	for _, r := range []string{check.ViolationUnordered, check.ViolationSameOp, check.ViolationHeld, check.ViolationTakenOver} {
		if rules[r] == 0 {
			t.Fatalf("no %q violation among %d plans: %v", r, plans, rules)
		}
	}
	t.Logf("%d plans; violations by rule: %v", plans, rules)
}

// TestCheckSweepMatchesPairwiseScaleShapes compares the two checkers on the generated
// large shapes at small sizes, under every policy and with buffers piled on few offsets.
func TestCheckSweepMatchesPairwiseScaleShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range tracetest.Shapes {
		for _, n := range []int{40, 300} {
			p := tracetest.ShapeProgram(t, sh, n)
			for _, pol := range subarena.Policies() {
				res, err := replay.Run(p, replay.Options{Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				check.SameReport(t, fmt.Sprintf("%s %d %v", sh.Name, n, pol), p, res.Plan)
			}
			check.SameReport(t, fmt.Sprintf("%s %d piled", sh.Name, n), p, check.DenseOffsets(rng, p, 2048))
		}
	}
}

// TestScaleShapes replays every generated shape under every policy at a moderate size:
// the checker agrees with the pairwise one, the safe policies' plans are safe and no
// lower than LiveLB, and LiveLB agrees with its pairwise segments.
func TestScaleShapes(t *testing.T) {
	n := testutil.Count(1000, 300)
	for _, sh := range tracetest.Shapes {
		p := tracetest.ShapeProgram(t, sh, n)
		pairs := 0
		for _, pol := range subarena.Policies() {
			res, err := replay.Run(p, replay.Options{Policy: pol})
			if err != nil {
				t.Fatalf("%s %v: %v", sh.Name, pol, err)
			}
			rep := check.SameReport(t, fmt.Sprintf("%s %v", sh.Name, pol), p, res.Plan)
			if pol.Safe() && (!rep.Safe || res.LiveLB > res.HWM || res.LiveLB <= 0) {
				t.Fatalf("%s %v: safe %v, LiveLB %d, HWM %d", sh.Name, pol, rep.Safe, res.LiveLB, res.HWM)
			}
			pairs += rep.Pairs
		}
		if pairs == 0 {
			t.Fatalf("%s: no plan shares bytes between buffers", sh.Name)
		}

	}
}

// TestLiveSegmentsMatchReference: on random traces and schedules (replayed and random),
// and on the generated large shapes at small sizes, LiveSegments and trace.LetGo give
// exactly what the old loops gave.
func TestLiveSegmentsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	randomSchedule := func(p *trace.Program) check.Schedule {
		s := check.Schedule{Start: make([]int64, len(p.Ops)), End: make([]int64, len(p.Ops))}
		for k := range p.Ops {
			s.Start[k] = rng.Int64N(20)
			s.End[k] = s.Start[k] + 1 + rng.Int64N(4) // ties in ends are frequent
			s.Makespan = max(s.Makespan, s.End[k])
		}
		return s
	}
	n := testutil.Count(300, 60)
	for i := 0; i < n; i++ {
		p := tracetest.Resolve(t, tracetest.RandomTrace(rng, 10+rng.IntN(100)))
		check.CompareLiveSegments(t, fmt.Sprintf("trace %d random schedule", i), p, randomSchedule(p))
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
		if err != nil {
			t.Fatal(err)
		}
		check.CompareLiveSegments(t, fmt.Sprintf("trace %d replay", i), p, replayedSchedule(res))
	}
	for _, sh := range tracetest.Shapes {
		p := tracetest.ShapeProgram(t, sh, 200)
		check.CompareLiveSegments(t, sh.Name, p, randomSchedule(p))
	}
}

// discardBeforeDonor is the smallest trace on which donation and the release order of
// docs/TRACE.md's safety rule disagree: neg writes b in place over a (a dense read of exactly
// b's size that nothing uses later), then the host discards lo, the first half of b,
// before it releases a. For the bytes of lo, b lets them go first (at the discard) and a
// last (at its release), so the rule requires every use through b (neg) to happen-before
// every use through a (fill, neg): fill -> neg is the only order there is, and neg ->
// fill is missing. Donating b over a would make a plan check.Plan rejects.
const discardBeforeDonor = `{
  "format": "subarena-trace/v1", "name": "discard-before-donor", "granule": 4,
  "engines": ["e"],
  "steps": [
    {"alloc": "a", "size": 16, "shape": [4], "elem": 4},
    {"op": "fill", "writes": ["a"]},
    {"alloc": "b", "size": 16, "shape": [4], "elem": 4},
    {"op": "neg", "reads": ["a"], "writes": ["b"], "inplace": true},
    {"view": "lo", "of": "b", "offset": 0, "shape": [2], "strides": [4], "elem": 4},
    {"view": "hi", "of": "b", "offset": 8, "shape": [2], "strides": [4], "elem": 4},
    {"release": "lo"},
    {"op": "sum", "reads": ["hi"]},
    {"release": "a"},
    {"release": "b"}
  ]
}`

// TestDonationFollowsReleaseOrder: replay does not donate a buffer's bytes to an output
// that lets some of them go (here by a discard) before the buffer does; the plan that
// donation would make is unsafe by check.Plan and by the byte-by-byte oracle alike. With the
// discard moved after a's release, a goes first for every byte and the donation stands.
func TestDonationFollowsReleaseOrder(t *testing.T) {
	tr, err := trace.Parse([]byte(discardBeforeDonor))
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, tr)
	// The plan donation would make: b exactly over a.
	over := &trace.Plan{Trace: tr.Name, Size: 16, Offsets: map[string]int64{"a": 0, "b": 0}}
	rep, err := check.Plan(p, over)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Safe || len(rep.Violations) != 1 || rep.Violations[0].MissingEdge() != "neg -> fill" ||
		rep.Violations[0].Bytes != 8 {
		t.Fatalf("b over a: %+v", rep)
	}
	if want := check.BruteCheck(check.BuildOracle(tr), over); !check.EqualKeys(check.CheckKeys(rep), want) {
		t.Fatalf("b over a: check %v, oracle %v", check.CheckKeys(rep), want)
	}
	res, err := replay.Run(p, replay.Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("replay plan %v: %v %+v", res.Plan.Offsets, err, rep)
	}
	if res.Donated != 0 || res.Plan.Offsets["b"] == res.Plan.Offsets["a"] {
		t.Fatalf("replay donated: %d donations, plan %v", res.Donated, res.Plan.Offsets)
	}

	// a released before the discard: a lets every byte go first, and donation is safe.
	steps := tr.Steps
	late := &trace.Trace{Name: tr.Name, Granule: tr.Granule, Engines: tr.Engines}
	late.Steps = append(late.Steps, steps[:6]...)
	late.Steps = append(late.Steps, steps[8], steps[6], steps[7], steps[9])
	p = tracetest.Resolve(t, late)
	if rep, err := check.Plan(p, over); err != nil || !rep.Safe {
		t.Fatalf("b over a with a released first: %v %+v", err, rep)
	}
	res, err = replay.Run(p, replay.Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Donated != 1 || res.Plan.Offsets["b"] != res.Plan.Offsets["a"] {
		t.Fatalf("no donation with a released first: %d donations, plan %v", res.Donated, res.Plan.Offsets)
	}
	if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("replay plan %v: %v %+v", res.Plan.Offsets, err, rep)
	}
}

// replayedSchedule is the schedule a replay ran: each op's start and end, and the end of
// the last op.
func replayedSchedule(res *replay.Result) check.Schedule {
	s := check.Schedule{Start: make([]int64, len(res.OpTimes)), End: make([]int64, len(res.OpTimes)), Makespan: res.Makespan}
	for k, o := range res.OpTimes {
		s.Start[k], s.End[k] = o.Start, o.End
	}
	return s
}
