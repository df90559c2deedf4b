package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/minimalloc"

	"github.com/subarena/subarena/trace/tracefile"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/replay"
)

// ggmlBound reads a ggml trace's max_live_bytes_subrange_elementwise_inplace_exact:
// the bound when each byte lives until its last read through any view and
// elementwise ops may write over dying inputs, through views too.
func ggmlBound(t testing.TB, path string) int64 {
	t.Helper()
	data := testutil.Read(t, ".", path)
	var doc struct {
		Analysis struct {
			Bound int64 `json:"max_live_bytes_subrange_elementwise_inplace_exact"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.Analysis.Bound <= 0 {
		t.Fatalf("%s: no bound (%v)", path, err)
	}
	return doc.Analysis.Bound
}

// checkSafe runs the checker (package trace/check) on a result, independently of
// the check Plan already ran: the plan, placements included, against the
// input trace; the plan read back from its JSON; and the plan's offsets
// against the trace rewritten with every placed buffer a view of its host.
func checkSafe(t testing.TB, res Result) {
	t.Helper()
	p, err := res.Trace.Resolve()
	if err != nil {
		t.Fatalf("result trace: %v", err)
	}
	rep, err := check.Plan(p, res.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Safe {
		t.Fatalf("unsafe plan: %s", rep.Violations[0].String())
	}
	if len(res.Plan.Placements) != len(res.Relaid) {
		t.Fatalf("%d placements for relaid %v", len(res.Plan.Placements), res.Relaid)
	}
	back, _ := readBack(t, res)
	if rep, err := check.Plan(p, back); err != nil || !rep.Safe {
		t.Fatalf("plan read back from JSON: %v %+v", err, rep)
	}
	t2, flat, err := trace.ViewPlacements(p, res.Plan)
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	p2 := tracetest.Resolve(t, t2)
	if rep, err := check.Plan(p2, flat); err != nil || !rep.Safe {
		t.Fatalf("offsets on the rewritten trace: %v %+v", err, rep)
	}
	var size int64
	for name, off := range res.Plan.Offsets {
		r, _ := p.Lookup(name)
		size = max(size, off+p.Buffers[r.Buffer].Size)
	}
	// The replay reports its high-water mark in whole granules.
	if size > res.Plan.Size || (res.Method != "online replay" && size != res.Plan.Size) {
		t.Fatalf("%s: plan size %d, highest end %d", res.Method, res.Plan.Size, size)
	}
}

func TestPlanGGMLTiny(t *testing.T) {
	tr := tracetest.Load(t, ggmlTiny)
	bound := ggmlBound(t, ggmlTiny)
	for _, budget := range []time.Duration{0, 200 * time.Millisecond} {
		res, rr, err := planReplayed(tr, Options{Check: true, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		checkSafe(t, res)
		t.Logf("budget %v: size %d, lower bound %d, replay %d, %d in place (%d relaid), %s, %v",
			budget, res.Plan.Size, res.LowerBound, rr.hwm, res.InPlace, len(res.Relaid), res.Method, res.Elapsed)
		if res.Plan.Size > bound {
			t.Errorf("size %d above the in-place subrange bound %d", res.Plan.Size, bound)
		}
		if !replayCut(t, rr) && (rr.hwm == 0 || res.Plan.Size > rr.hwm) {
			t.Errorf("size %d, replay %d", res.Plan.Size, rr.hwm)
		}
		if !slices.Contains(res.Relaid, "gate_silu-0") {
			t.Errorf("gate_silu-0 not placed over the gate half: relaid %v", res.Relaid)
		}
	}
	// Without strided in-place placement the gate/up peak cannot be met.
	res, err := Plan(tr, Options{Check: true, NoRelayout: true, Replay: replay.Online})
	if err != nil {
		t.Fatal(err)
	}
	checkSafe(t, res)
	if len(res.Relaid) != 0 || res.Trace != tr || res.Plan.Size <= bound {
		t.Errorf("NoRelayout: size %d, relaid %v", res.Plan.Size, res.Relaid)
	}
	res, err = Plan(tr, Options{Check: true, NoInPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	checkSafe(t, res)
	if res.InPlace != 0 {
		t.Errorf("NoInPlace placed %d in place", res.InPlace)
	}
}

// TestPlanMiniMallocTraces plans MiniMalloc instances imported as traces:
// the same optimum as the direct solver, and a plan the checker accepts.
func TestPlanMiniMallocTraces(t *testing.T) {
	for _, in := range []struct {
		file string
		want int64
	}{{"input.12.csv", 12}, {"C.1048576.csv", 1039360}} {
		tr := tracetest.Load(t, minimallocDir+"/"+in.file)
		res, err := Plan(tr, Options{Check: true, Budget: time.Minute, Replay: replay.Online})
		if err != nil {
			t.Fatal(err)
		}
		checkSafe(t, res)
		if res.Plan.Size != in.want || res.LowerBound != in.want || !res.Proven {
			t.Errorf("%s: size %d, lower bound %d, proven %v; want %d", in.file, res.Plan.Size, res.LowerBound, res.Proven, in.want)
		}
	}
}

func TestPlanRejects(t *testing.T) {
	if _, err := Plan(nil, Options{Check: true, Replay: replay.Online}); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("nil trace: %v", err)
	}
	bad := &trace.Trace{Name: "bad", Granule: 256, Engines: []string{"e"},
		Steps: []trace.Step{{Kind: trace.KindRelease, Name: "nothing"}}}
	if _, err := Plan(bad, Options{Check: true, Replay: replay.Online}); !errors.Is(err, ErrInvalidTrace) || !errors.Is(err, trace.ErrUnknownName) {
		t.Errorf("invalid trace: %v", err)
	}
	tr := tracetest.Load(t, ggmlTiny)
	if _, err := Plan(tr, Options{Check: true, Budget: -time.Second, Replay: replay.Online}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative budget: %v", err)
	}
}

// genTrace builds a random valid trace: buffers of two-dimensional float
// tensors, column halves and transposes taken as views, ops on up to three
// engines with waits and syncs, in-place ops writing a fresh buffer of a
// read's shape, releases and discards after last use, some buffers held to
// the end.
//
// With strided set, an op reads a column half or transpose half the time
// (in place over a strided input, the planner places its output with a
// placement), and the host lets most buffers go at the end.
func genTrace(rng *rand.Rand, strided bool) *trace.Trace {
	engines := []string{"compute", "copy", "net"}[:1+rng.IntN(3)]
	tr := &trace.Trace{Name: "gen", Granule: []int64{1, 4, 16}[rng.IntN(3)], Engines: engines}
	type data struct {
		name  string
		buf   string
		shape []int64
		live  bool
	}
	var names []*data
	bufOf := map[string]*data{}
	var ops []string
	n := 0
	fresh := func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) }
	alloc := func(shape []int64) *data {
		d := &data{name: fresh("b"), shape: shape, live: true}
		d.buf = d.name
		tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindAlloc, Name: d.name, Size: shape[0] * shape[1] * 4,
			Engine: engines[rng.IntN(len(engines))], Shape: shape, Elem: 4})
		names = append(names, d)
		bufOf[d.name] = d
		return d
	}
	liveNames := func() []*data {
		var out []*data
		for _, d := range names {
			if d.live && bufOf[d.buf].live {
				out = append(out, d)
			}
		}
		return out
	}
	viewsOf := func(ds []*data) []*data {
		var out []*data
		for _, d := range ds {
			if d.name != d.buf {
				out = append(out, d)
			}
		}
		return out
	}
	for range 4 + rng.IntN(3) { // inputs, filled by the host
		alloc([]int64{1 + rng.Int64N(3), 2 * (1 + rng.Int64N(3))})
	}
	for range 10 + rng.IntN(20) {
		live := liveNames()
		switch r := rng.IntN(10); {
		case r < 2 && len(live) > 0: // views: column halves or a transpose
			d := live[rng.IntN(len(live))]
			if d.name != d.buf {
				break
			}
			rows, cols := d.shape[0], d.shape[1]
			if cols%2 == 0 && rng.IntN(2) == 0 {
				for h := range int64(2) {
					v := &data{name: fresh("v"), buf: d.buf, shape: []int64{rows, cols / 2}, live: true}
					tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindView, Name: v.name, Of: d.name,
						Offset: h * cols / 2 * 4, Shape: v.shape, Strides: []int64{cols * 4, 4}, Elem: 4})
					names = append(names, v)
				}
			} else {
				v := &data{name: fresh("t"), buf: d.buf, shape: []int64{cols, rows}, live: true}
				tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindView, Name: v.name, Of: d.name,
					Shape: v.shape, Strides: []int64{4, cols * 4}, Elem: 4})
				names = append(names, v)
			}
		case r < 7 && len(live) > 0: // an op writing a fresh buffer
			reads := []*data{live[rng.IntN(len(live))]}
			if views := viewsOf(live); strided && len(views) > 0 && rng.IntN(2) == 0 {
				reads[0] = views[rng.IntN(len(views))] // over a strided input, at times
			}
			if rng.IntN(2) == 0 {
				reads = append(reads, live[rng.IntN(len(live))])
			}
			b := alloc(slices.Clone(reads[0].shape))
			op := trace.Step{Kind: trace.KindOp, Name: fresh("op"), Engine: engines[rng.IntN(len(engines))],
				Writes: []string{b.name}, InPlace: rng.IntN(3) > 0, Cost: 1 + rng.Int64N(3)}
			for _, rd := range reads {
				if !slices.Contains(op.Reads, rd.name) {
					op.Reads = append(op.Reads, rd.name)
				}
			}
			if len(ops) > 0 && rng.IntN(3) == 0 {
				op.Waits = []string{ops[rng.IntN(len(ops))]}
			}
			tr.Steps = append(tr.Steps, op)
			ops = append(ops, op.Name)
		case r < 9 && len(live) > 0: // let something go
			d := live[rng.IntN(len(live))]
			if rng.IntN(5) == 0 {
				break // held to the end
			}
			tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindRelease, Name: d.name})
			d.live = false
			if d.name == d.buf {
				for _, o := range names {
					if o.buf == d.name {
						o.live = false
					}
				}
			} else {
				// A discard: the buffer itself and its other views may
				// overlap these bytes; stop using all of them.
				for _, o := range names {
					if o.buf == d.buf {
						o.live = false
					}
				}
			}
		case len(ops) > 0:
			tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindSync, Name: ops[rng.IntN(len(ops))]})
		}
	}
	// The host lets most of what is left go at the end: a buffer held to the
	// end keeps its bytes from any in-place output.
	if strided {
		for _, d := range names {
			if d.name == d.buf && d.live && rng.IntN(4) > 0 {
				tr.Steps = append(tr.Steps, trace.Step{Kind: trace.KindRelease, Name: d.name})
				d.live = false
			}
		}
	}
	return tr
}

// randomTraces returns a generator seeded with seed1 and seed2 and the n traces genTrace
// draws from it in turn, by index, trace i strided when strided(i). A caller may draw
// from the generator between traces.
func randomTraces(seed1, seed2 uint64, n int, strided func(i int) bool) (*rand.Rand, iter.Seq2[int, *trace.Trace]) {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	return rng, func(yield func(int, *trace.Trace) bool) {
		for i := range n {
			if !yield(i, genTrace(rng, strided(i))) {
				return
			}
		}
	}
}

// evenStrided, allStrided and noneStrided choose which traces of randomTraces are strided.
func evenStrided(i int) bool { return i%2 == 0 }
func allStrided(int) bool    { return true }
func noneStrided(int) bool   { return false }

// raceIters is n, or underRace under the race detector.
func raceIters(n, underRace int) int {
	if invariants.RaceEnabled {
		return underRace
	}
	return n
}

// randomIters is how many traces the random planner tests draw: 150, 40
// under the race detector, 2000 with SUBARENA_PLAN_LONG set.
func randomIters() int {
	if os.Getenv("SUBARENA_PLAN_LONG") != "" {
		return 2000
	}
	return raceIters(150, 40)
}

// TestPlanRandomTraces plans random traces and checks every plan with the
// checker (package trace/check), against the replay, and against the bounds.
func TestPlanRandomTraces(t *testing.T) {
	_, traces := randomTraces(21, 22, randomIters(), noneStrided)
	relaid, inplace, multi, donated, replayWon, replayProven := 0, 0, 0, 0, 0, 0
	for iter, tr := range traces {
		if err := tr.Validate(); err != nil {
			t.Fatalf("iter %d: generator made an invalid trace: %v", iter, err)
		}
		budget := time.Duration(0)
		if iter%4 == 0 {
			budget = 50 * time.Millisecond
		}
		res, rr, err := planReplayed(tr, Options{Check: true, Budget: budget})
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		checkSafe(t, res)
		checkInplacer(t, tr)
		donated += checkReplay(t, iter, tr)
		cut := replayCut(t, rr)
		if rr.err != nil && !cut {
			t.Fatalf("iter %d: replay failed: %v", iter, rr.err)
		}
		if rr.unsafe {
			// The replay runs a safe policy: its plan must pass the checker.
			t.Fatalf("iter %d: the replay's lower plan fails the checker\n%s", iter, trace.Marshal(tr))
		}
		if !cut && res.Plan.Size > rr.hwm {
			t.Fatalf("iter %d: size %d above replay %d", iter, res.Plan.Size, rr.hwm)
		}
		if res.LowerBound > res.Plan.Size {
			t.Fatalf("iter %d: lower bound %d above size %d", iter, res.LowerBound, res.Plan.Size)
		}
		if res.Proven != (res.Plan.Size == res.LowerBound) && res.Method == "online replay" {
			t.Fatalf("iter %d: replay plan %d, bound %d, proven %v", iter, res.Plan.Size, res.LowerBound, res.Proven)
		}
		if res.Method == "online replay" {
			replayWon++
			if res.LowerBound == 0 {
				t.Fatalf("iter %d: the replay's plan (%d B) reports no bound", iter, res.Plan.Size)
			}
			if res.Proven {
				replayProven++
			}
		}
		relaid += len(res.Relaid)
		inplace += res.InPlace
		if len(tr.Engines) > 1 {
			multi++
		}
		for _, opt := range []Options{{Check: true, NoRelayout: true, Replay: replay.Online}, {Check: true, NoInPlace: true}} {
			r2, err := Plan(tr, opt)
			if err != nil {
				t.Fatalf("iter %d %+v: %v", iter, opt, err)
			}
			checkSafe(t, r2)
		}
	}
	t.Logf("%d relaid, %d in place, %d multi-engine traces, %d replay donations, every replay plan safe; "+
		"the replay's plan kept on %d, proven at its bound on %d", relaid, inplace, multi, donated, replayWon, replayProven)
	if relaid == 0 || inplace == 0 || multi == 0 || donated == 0 {
		t.Fatalf("degenerate generator: %d relaid, %d in place, %d multi-engine traces, %d donations", relaid, inplace, multi, donated)
	}
}

// checkReplay replays tr online with donation and fails unless the checker
// accepts the replay's plan: replay runs a safe policy and donates only
// where docs/TRACE.md's release order allows, so its plan must be safe whether
// or not the planner would take it. It returns the donations made.
func checkReplay(t *testing.T, iter int, tr *trace.Trace) int {
	t.Helper()
	p := tracetest.Resolve(t, tr)
	rr, err := replay.Run(p, replay.Options{})
	if err != nil {
		t.Fatalf("iter %d: replay: %v\n%s", iter, err, trace.Marshal(tr))
	}
	rep, err := check.Plan(p, rr.Plan)
	if err != nil {
		t.Fatalf("iter %d: check of the replay plan: %v", iter, err)
	}
	if !rep.Safe {
		t.Fatalf("iter %d: the replay plan %v fails the checker: %s\n%s", iter, rr.Plan.Offsets,
			rep.Violations[0].String(), trace.Marshal(tr))
	}
	if rr.LiveLB > rr.HWM || rr.Plan.LowerBound != rr.LiveLB {
		// LiveLB is the bound the planner reports with the replay's plan
		t.Fatalf("iter %d: replay HWM %d, LiveLB %d, plan bound %d\n%s", iter, rr.HWM, rr.LiveLB, rr.Plan.LowerBound, trace.Marshal(tr))
	}
	return rr.Donated
}

// TestPlanRandomStridedTraces plans random traces rich in in-place ops over
// strided inputs and checks every plan, placements included, against the
// trace as generated (checkSafe also checks the rewrite with placed buffers
// as views). The online replay's own plan must pass the checker on every
// trace, and the planner must never find a lower replay plan unsafe.
func TestPlanRandomStridedTraces(t *testing.T) {
	iters := randomIters()
	_, traces := randomTraces(23, 24, iters, allStrided)
	relaid, plans, multi, donated := 0, 0, 0, 0
	for iter, tr := range traces {
		donated += checkReplay(t, iter, tr)
		budget := time.Duration(0)
		if iter%4 == 0 {
			budget = 50 * time.Millisecond
		}
		for _, withReplay := range []bool{true, false} {
			res, rr, err := planWatched(tr, Options{Check: true, Budget: budget}, withReplay)
			if err != nil {
				t.Fatalf("iter %d: %v", iter, err)
			}
			if res.Trace != tr {
				t.Fatalf("iter %d: plan for another trace", iter)
			}
			checkSafe(t, res)
			if rr.unsafe {
				t.Fatalf("iter %d: the replay's lower plan fails the checker\n%s", iter, trace.Marshal(tr))
			}
			if len(res.Relaid) > 0 {
				relaid += len(res.Relaid)
				plans++
				if len(tr.Engines) > 1 {
					multi++
				}
			}
		}
		checkInplacer(t, tr)
	}
	t.Logf("%d buffers placed over strided inputs in %d plans (%d on several engines), checked against their traces; %d replay donations, every replay plan safe",
		relaid, plans, multi, donated)
	if plans < iters/10 || multi == 0 || donated == 0 {
		t.Fatalf("degenerate generator: %d plans with placements, %d on several engines, %d donations", plans, multi, donated)
	}
}

// TestCoarseStartAgreesWithSolve plans random one-engine traces both ways:
// when the coarse greedy start is taken, its placement must be valid for
// the fine problem and no higher than the fine greedy's, and its lower
// bound no higher than the fine problem's.
func TestCoarseStartAgreesWithSolve(t *testing.T) {
	_, traces := randomTraces(7, 8, 150, evenStrided)
	taken := 0
	for i, tr := range traces {
		tr.Engines = tr.Engines[:1]
		for k := range tr.Steps {
			tr.Steps[k].Engine = tr.Engines[0]
		}
		p, err := tr.Resolve()
		if err != nil {
			continue // the one-engine rewrite can drop a wait's reason; skip such traces
		}
		hb, err := happensBefore(p)
		if err != nil {
			t.Fatal(err)
		}
		ip := newInplacer(p, hb, true)
		ip.decide()
		d := derive(ip)
		sol, c, ok := coarseStart(ip)
		if f := deriveFrom(ip, c); c != nil && !(reflect.DeepEqual(f.prob, d.prob) && slices.Equal(f.itemOf, d.itemOf) &&
			slices.Equal(f.shift, d.shift) && f.dense == nil && d.dense == nil) {
			t.Fatalf("trace %d: the fine problem derived from the coarse segments differs from derive's", i)
		}
		if !ok {
			continue
		}
		if !slices.Equal(c.itemOf, d.itemOf) || !slices.Equal(c.shift, d.shift) {
			t.Fatalf("trace %d: coarse and fine derivations disagree on items", i)
		}
		taken++
		if _, err := Verify(d.prob, sol.Offsets); err != nil {
			t.Fatalf("trace %d: coarse start invalid for the fine problem: %v", i, err)
		}
		fine, err := Solve(d.prob, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sol.Height > fine.Height {
			t.Fatalf("trace %d: coarse start %d above the fine greedy %d", i, sol.Height, fine.Height)
		}
		lb, _ := LowerBound(d.prob)
		if sol.LowerBound > lb {
			t.Fatalf("trace %d: lower bound %d above the fine problem's %d", i, sol.LowerBound, lb)
		}
	}
	t.Logf("coarse start taken on %d traces", taken)
	if taken == 0 {
		t.Fatal("the coarse start was never taken: nothing compared")
	}
}

// checkInplacer replays the in-place decisions on tr with the invariant
// checker after every placement, then checks the derived problem.
func checkInplacer(t *testing.T, tr *trace.Trace) {
	t.Helper()
	p := tracetest.Resolve(t, tr)
	hb, err := happensBefore(p)
	if err != nil {
		t.Fatal(err)
	}
	ip := newInplacer(p, hb, true)
	var stepErr error
	ip.afterCommit = func() {
		if stepErr == nil {
			stepErr = ip.CheckInvariants()
		}
	}
	ip.decide()
	if stepErr == nil {
		stepErr = ip.CheckInvariants()
	}
	if stepErr != nil {
		t.Fatal(stepErr)
	}
	d := derive(ip)
	if err := d.prob.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := mustCompile(d.prob).CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func ExamplePlan() {
	tr, err := tracefile.Load("../../testdata/ggml/ggml-tiny.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := Plan(tr, Options{Check: true, Budget: time.Second, Replay: replay.Online})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("arena", res.Plan.Size, "bytes; lower bound", res.LowerBound)
	// gate_silu-0 is written over the gate half of gate_up-0: the plan lays
	// it over that strided footprint instead of giving it an offset.
	pl := res.Plan.Placements["gate_silu-0"]
	fmt.Println("gate_silu-0 is laid over", pl.Of, "at", pl.Offset, "with strides", pl.Strides)
	// The plan checks against the trace as it is.
	p, _ := tr.Resolve()
	rep, err := check.Plan(p, res.Plan)
	fmt.Println("safe:", err == nil && rep.Safe)
	// Output:
	// arena 241792 bytes; lower bound 241792
	// gate_silu-0 is laid over gate_up-0 at 0 with strides [176128 176128 5504 4]
	// safe: true
}

// TestPlanMiniMallocCSV plans MiniMalloc problems on their own time axis:
// the plan is for the importer's trace and passes its checker.
func TestPlanMiniMallocCSV(t *testing.T) {
	for _, in := range []struct {
		file string
		want int64
	}{{"input.12.csv", 12}, {"C.1048576.csv", 1039360}} {
		mm, err := minimalloc.Parse(testutil.Read(t, minimallocDir, in.file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := PlanMiniMalloc(mm, in.file, Options{Check: true, Budget: time.Minute, Replay: replay.Online})
		if err != nil {
			t.Fatal(err)
		}
		checkSafe(t, res)
		if res.Plan.Size != in.want || !res.Proven || len(res.Plan.Offsets) != len(mm.Buffers) {
			t.Errorf("%s: size %d proven %v, %d offsets; want %d", in.file, res.Plan.Size, res.Proven, len(res.Plan.Offsets), in.want)
		}
	}
	if _, err := PlanMiniMalloc(nil, "x", Options{Check: true, Replay: replay.Online}); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("nil problem: %v", err)
	}
	if _, err := PlanMiniMalloc(&minimalloc.CSV{}, "x", Options{Check: true, Budget: -1, Replay: replay.Online}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative budget: %v", err)
	}
}

// readBack writes res as a plan document and parses it with the trace
// package; it returns the plan read and the document.
func readBack(t testing.TB, res Result) (*trace.Plan, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := trace.ParsePlan(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return back, buf.Bytes()
}

// TestWriteJSON checks the plan document: the trace package reads it back
// to the same plan, and the informational keys are there.
func TestWriteJSON(t *testing.T) {
	res, err := Plan(tracetest.Load(t, ggmlTiny), Options{Check: true, Replay: replay.Online})
	if err != nil {
		t.Fatal(err)
	}
	back, data := readBack(t, res)
	if back.Size != res.Plan.Size || back.LowerBound != res.LowerBound || len(back.Offsets) != len(res.Plan.Offsets) {
		t.Fatalf("read back %+v, wrote %+v", back, res.Plan)
	}
	for name, off := range res.Plan.Offsets {
		if back.Offsets[name] != off {
			t.Fatalf("offset of %q: read %d, wrote %d", name, back.Offsets[name], off)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"format", "trace", "size", "offsets", "lower_bound", "ms", "method", "proven", "relaid"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("plan JSON lacks %q", k)
		}
	}
	if err := (Result{}).WriteJSON(io.Discard); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("empty result: %v", err)
	}
}

func TestPlanProgramRejects(t *testing.T) {
	if _, err := PlanProgram(nil, Options{Check: true, Replay: replay.Online}); !errors.Is(err, ErrInvalidTrace) {
		t.Errorf("nil program: %v", err)
	}
}

// TestBudgetBoundsReplay: a replay that has not finished when the budget ends is
// abandoned: Plan returns its own checked plan within the budget, and the replay's
// caller learns it gave the replay up (an error matching trace.ErrStopped); a replay
// that finishes in time is compared as before.
func TestBudgetBoundsReplay(t *testing.T) {
	tr := scaleTrace(t, tracetest.Loop(30, 2, 0))
	p := tracetest.Resolve(t, tr)
	release := make(chan struct{})
	var w replay.Watch
	slow := func(p *trace.Program, stop <-chan struct{}) (*trace.Plan, error) {
		pl, err := w.Online(p, stop)
		<-release // returns only once Plan has
		return pl, err
	}
	const budget = 300 * time.Millisecond
	start := time.Now()
	res, err := Plan(tr, Options{Check: true, Budget: budget, Replay: slow})
	elapsed := time.Since(start)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	hwm, rerr := w.Outcome(res.Trace)
	close(release)
	if !errors.Is(rerr, trace.ErrStopped) || hwm != 0 || res.Method == "online replay" {
		t.Fatalf("replay error %v, hwm %d, method %s", rerr, hwm, res.Method)
	}
	if elapsed > budget+2*time.Second {
		t.Fatalf("Plan took %v on a %v budget", elapsed, budget)
	}
	if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("check: %v %+v", err, rep)
	}
	res, rr, err := planReplayed(tr, Options{Check: true, Budget: budget})
	if err != nil || rr.err != nil || rr.hwm == 0 {
		t.Fatalf("unhindered replay: %v, %v, hwm %d", err, rr.err, rr.hwm)
	}
	checkSafe(t, res)
}

// TestReplayPlanAlwaysChecked: a replay's plan lower than the planner's but
// unsafe (every buffer at offset 0) is never kept, whether or not
// Options.Check asks for the check of the planner's own plan: on ggml-tiny
// the replay runs after the greedy placement (no budget), on the loop trace
// beside the search (its check in the prelude).
func TestReplayPlanAlwaysChecked(t *testing.T) {
	overlapping := func(p *trace.Program, _ <-chan struct{}) (*trace.Plan, error) {
		pl := &trace.Plan{Trace: p.Trace.Name, Offsets: map[string]int64{}}
		for i := range p.Buffers {
			if b := &p.Buffers[i]; !b.External {
				pl.Offsets[b.Name] = 0
				pl.Size = max(pl.Size, b.Size)
			}
		}
		return pl, nil
	}
	for _, c := range []struct {
		tr     *trace.Trace
		budget time.Duration
	}{
		{tracetest.Load(t, ggmlTiny), 0},
		{scaleTrace(t, tracetest.Loop(30, 2, 0)), 200 * time.Millisecond},
	} {
		p := tracetest.Resolve(t, c.tr)
		unsafe, _ := overlapping(p, nil)
		if rep, err := check.Plan(p, unsafe); err != nil || rep.Safe {
			t.Fatalf("%s: the overlapping plan is not unsafe: %v %+v", c.tr.Name, err, rep)
		}
		for _, checkOwn := range []bool{false, true} {
			var w replay.Watch
			watched := func(p *trace.Program, stop <-chan struct{}) (*trace.Plan, error) {
				if _, err := w.Online(p, stop); err != nil { // the Watch records that it ran
					return nil, err
				}
				return overlapping(p, stop)
			}
			res, err := Plan(c.tr, Options{Check: checkOwn, Budget: c.budget, Replay: watched})
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s, Check %v, budget %v", c.tr.Name, checkOwn, c.budget)
			hwm, rerr := w.Outcome(res.Trace)
			if replayCut(t, replayed{err: rerr}) {
				continue
			}
			if rerr != nil || hwm == 0 {
				t.Fatalf("%s: the replay ran? hwm %d, %v", what, hwm, rerr)
			}
			if res.Method == "online replay" {
				t.Fatalf("%s: the unsafe replay plan was kept", what)
			}
			if unsafe.Size >= res.Plan.Size {
				t.Fatalf("%s: the overlapping plan's size %d is not below the plan's %d", what, unsafe.Size, res.Plan.Size)
			}
			checkSafe(t, res)
		}
	}
}

// replayed is what a caller learns of the online replay it ran beside a plan
// (replay.Watch): its high-water mark, its error, and whether it was lower
// than the plan returned without being taken (the checker rejected it).
type replayed struct {
	hwm    int64
	err    error
	unsafe bool
}

// planReplayed plans tr with opts and the online replay beside it.
func planReplayed(tr *trace.Trace, opts Options) (Result, replayed, error) {
	return planWatched(tr, opts, true)
}

// planWatched plans tr with opts, with the online replay beside it when
// withReplay, and returns the replay's figures as its caller sees them.
func planWatched(tr *trace.Trace, opts Options, withReplay bool) (Result, replayed, error) {
	var w replay.Watch
	if withReplay {
		opts.Replay = w.Online
	}
	res, err := Plan(tr, opts)
	if err != nil {
		return res, replayed{}, err
	}
	var rr replayed
	rr.hwm, rr.err = w.Outcome(res.Trace)
	rr.unsafe = rr.hwm > 0 && rr.hwm < res.Plan.Size && res.Method != "online replay"
	return res, rr, nil
}

// replayCut reports whether the online replay was abandoned when its budget ended (a
// loaded machine or the race detector can make a short budget run out first); the
// comparisons with the replay are then skipped.
func replayCut(t *testing.T, rr replayed) bool {
	t.Helper()
	if errors.Is(rr.err, trace.ErrStopped) {
		t.Logf("the online replay did not finish within the budget: %v", rr.err)
		return true
	}
	return false
}

// TestFirstPlanTime: the first placement comes before the end, with and
// without a search, on a one-engine and a multi-engine trace.
func TestFirstPlanTime(t *testing.T) {
	for _, tr := range []*trace.Trace{tracetest.Load(t, ggmlTiny), tracetest.Load(t, "../testdata/split-qkv.json")} {
		for _, budget := range []time.Duration{0, 50 * time.Millisecond} {
			res, err := Plan(tr, Options{Check: true, Budget: budget})
			if err != nil {
				t.Fatal(err)
			}
			if res.FirstPlan <= 0 || res.FirstPlan > res.Elapsed {
				t.Errorf("%s budget %v: first plan at %v of %v", tr.Name, budget, res.FirstPlan, res.Elapsed)
			}
		}
	}
}

// TestReplayPlanReportsBound: when the online replay's plan is kept, the
// result still reports a lower bound (the replay's LiveLB, or the planner's
// on a trace without inplace ops), and a plan equal to it is proven. Before,
// the replay's plan came with lower bound 0 and proven false.
func TestReplayPlanReportsBound(t *testing.T) {
	// A generated ggml decode-like graph on which the replay's plan is kept at
	// its bound.
	doc, err := ggGenerate(ggParams{Arch: ggLLaMA, Layers: 1, Embd: 48, FF: 80, Head: 4, Tokens: 13, Past: 16, FusedQKV: true})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ggmltrace.Import(doc, "g")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Plan(tr, Options{Check: true, Replay: replay.Online})
	if err != nil {
		t.Fatal(err)
	}
	checkSafe(t, res)
	if res.Method != "online replay" || res.LowerBound != res.Plan.Size || !res.Proven {
		t.Errorf("ggml graph: method %q, size %d, bound %d, proven %v; want the replay's plan proven at its bound",
			res.Method, res.Plan.Size, res.LowerBound, res.Proven)
	}

	// MiniMalloc instance H, greedy only: the replay's plan is kept, with the
	// planner's bound (no op is inplace, so it holds for every plan).
	mm, err := minimalloc.Parse(testutil.Read(t, minimallocDir, "H.1048576.csv"))
	if err != nil {
		t.Fatal(err)
	}
	res, err = PlanMiniMalloc(mm, "H", Options{Check: true, Replay: replay.Online})
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, res.Trace)
	rr, err := replay.Run(p, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != "online replay" || res.LowerBound < max(rr.LiveLB, res.LiveBound) || res.LowerBound > res.Plan.Size ||
		res.Plan.LowerBound != res.LowerBound ||
		res.Proven != (res.LowerBound == res.Plan.Size) {
		t.Errorf("H: method %q, size %d, bound %d (LiveLB %d, live bound %d), proven %v", res.Method, res.Plan.Size,
			res.LowerBound, rr.LiveLB, res.LiveBound, res.Proven)
	}
}

// TestPlanReusesScratch: plans made one after another and at once, which
// share derivation memory through a Scratch (derived.release), are the
// plans each trace gets alone; and a warm Scratch spares allocations.
func TestPlanReusesScratch(t *testing.T) {
	_, seq := randomTraces(11, 4, 60, evenStrided)
	var traces []*trace.Trace
	for _, tr := range seq {
		traces = append(traces, tr)
	}
	want := make([]*trace.Plan, len(traces))
	for i, tr := range traces {
		res, err := Plan(tr, Options{Check: true})
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		want[i] = res.Plan
	}
	var sc Scratch // shared by every plan below, one after another and at once
	check := func(i int) error {
		res, err := Plan(traces[i], Options{Check: true, Scratch: &sc})
		if err != nil {
			return err
		}
		res.Plan.Ms, want[i].Ms = 0, 0
		if !reflect.DeepEqual(res.Plan, want[i]) {
			return fmt.Errorf("trace %d: plan %+v, alone %+v", i, res.Plan, want[i])
		}
		return nil
	}
	for i := len(traces) - 1; i >= 0; i-- { // another order than the first pass
		if err := check(i); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := g; i < len(traces); i += 4 {
				if err := check(i); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestScratchSparesAllocations: planning a trace again with the Scratch of
// its first plan allocates less than with a fresh one each time: none of
// the growth of the derivations' slices.
func TestScratchSparesAllocations(t *testing.T) {
	tr := scaleTrace(t, tracetest.Strided(2000))
	var warm Scratch
	if _, err := Plan(tr, Options{Check: true, Scratch: &warm}); err != nil {
		t.Fatal(err)
	}
	again := testing.AllocsPerRun(5, func() {
		if _, err := Plan(tr, Options{Check: true, Scratch: &warm}); err != nil {
			t.Fatal(err)
		}
	})
	fresh := testing.AllocsPerRun(5, func() {
		if _, err := Plan(tr, Options{Check: true, Scratch: new(Scratch)}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per plan: %.0f with a warm Scratch, %.0f with a fresh one", again, fresh)
	// Two derivations' pieces, deaths and per-buffer scratch grow by
	// doubling from empty in a fresh Scratch: dozens of allocations.
	if again > fresh-32 {
		t.Fatalf("a warm Scratch: %.0f allocations per plan, a fresh one %.0f", again, fresh)
	}
}

// TestPreludeReserve checks what a budgeted search leaves for after it:
// the check of the planner's own plan only when the planner checks it
// (Options.Check, or the invariants tag), and always the tail of the work.
func TestPreludeReserve(t *testing.T) {
	p := tracetest.Program(t, twoBranchesFile)
	const budget = time.Second
	tail := min(budget/20, 50*time.Millisecond)
	for _, withCheck := range []bool{false, true} {
		opts := Options{Budget: budget, Check: withCheck}
		pre := newPrelude(p, opts, time.Now())
		<-pre.done
		want := tail
		if opts.checks() {
			want += min(budget/10, 500*time.Millisecond)
		}
		if pre.reserve != want {
			t.Errorf("Check %v (checks %v): reserve %v, want %v", withCheck, opts.checks(), pre.reserve, want)
		}
	}
}
