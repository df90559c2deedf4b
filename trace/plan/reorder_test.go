package plan

import (
	"bytes"
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestReorderTwoBranches: running each branch to its small result before
// the other starts keeps one temporary live at a time. Fixed order: x and
// both temporaries, 256 + 2×4096 = 8448 bytes; reordered: x, one
// temporary and one result, 256 + 4096 + 256 = 4608, and the plans reach
// both bounds.
func TestReorderTwoBranches(t *testing.T) {
	p := tracetest.Program(t, twoBranchesFile)
	for _, rule := range ReorderRules {
		ro, err := Reorder(p, rule)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{0, 1, 3, 2, 4, 5}; !slices.Equal(ro.Order, want) {
			t.Errorf("%v: order %v, want %v", rule, ro.Order, want)
		}
		if ro.Peak != 4608 || ro.Fixed != 8448 {
			t.Errorf("%v: model peaks %d (fixed %d), want 4608 (8448)", rule, ro.Peak, ro.Fixed)
		}
	}
	rd, err := PlanReordered(p, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if rd.Best == nil || rd.Reordering == nil {
		t.Fatalf("best %v, reordering %v: want both", rd.Best, rd.Reordering)
	}
	if rd.Fixed.LowerBound != 8448 || rd.Fixed.Plan.Size != 8448 {
		t.Errorf("fixed: bound %d plan %d, want 8448 8448", rd.Fixed.LowerBound, rd.Fixed.Plan.Size)
	}
	res := rd.Chosen()
	if res.LowerBound != 4608 || res.Plan.Size != 4608 || !rd.Kept || res.Trace != rd.Reordering.Trace {
		t.Errorf("result: bound %d plan %d kept %v, want 4608 4608 and the reordering kept",
			res.LowerBound, res.Plan.Size, rd.Kept)
	}
	var names []string
	for _, s := range res.Trace.Steps {
		if s.Kind == trace.KindOp {
			names = append(names, s.Name)
		}
	}
	if want := []string{"in", "a1", "a2", "b1", "b2", "c"}; !slices.Equal(names, want) {
		t.Errorf("reordered ops %v, want %v", names, want)
	}
	checkReordered(t, res.Trace, res.Plan)
	// a2 and b2 may run in either order, but one of them runs second and
	// holds its temporary and its result beside the other's result:
	// 4096 + 2×256, what the reordered plan reaches.
	if rd.OrderBound != 4608 {
		t.Errorf("order bound %d, want 4608", rd.OrderBound)
	}
	// Without Reorder, Plan is the fixed order's.
	plain, err := Plan(p.Trace, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Plan.Size != 8448 || plain.Trace != p.Trace {
		t.Errorf("plain plan %d for trace %p, want 8448 for the input %p", plain.Plan.Size, plain.Trace, p.Trace)
	}
}

func checkReordered(t *testing.T, tr *trace.Trace, pl *trace.Plan) {
	t.Helper()
	p, err := tr.Resolve()
	if err != nil {
		t.Fatalf("reordered trace: %v", err)
	}
	rep, err := check.Plan(p, pl)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Safe {
		t.Fatalf("checker rejects the plan: %s", rep.Violations[0].String())
	}
}

// TestReorderMultiEngine: a trace of two engines is not reordered, and
// says why.
func TestReorderMultiEngine(t *testing.T) {
	tr := tracetest.Load(t, twoBranchesFile)
	tr.Engines = append(tr.Engines, "f")
	p := tracetest.Resolve(t, tr)
	if _, err := Reorder(p, ReorderNet); !errors.Is(err, ErrNotReordered) {
		t.Fatalf("Reorder: %v, want ErrNotReordered", err)
	}
	rd, err := PlanReordered(p, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if res := rd.Chosen(); rd.Skipped == "" || rd.Best != nil || rd.Reordering != nil || rd.Kept || res.Plan.Size != 8448 {
		t.Errorf("skipped %q best %v kept %v plan %d", rd.Skipped, rd.Best, rd.Kept, res.Plan.Size)
	}
}

// oneEngine moves every step of tr onto its first engine.
func oneEngine(tr *trace.Trace) {
	e := tr.Engines[0]
	tr.Engines = tr.Engines[:1]
	for i := range tr.Steps {
		if tr.Steps[i].Engine != "" {
			tr.Steps[i].Engine = e
		}
	}
}

// byteRun is the bytes [lo, hi).
type byteRun struct{ lo, hi int64 }

// byteRuns are sorted, disjoint, non-adjacent byteRuns.
type byteRuns []byteRun

// elementSpans returns the bytes of l, found by walking every element
// (testutil.LayoutBytes), not by the package's footprints.
func elementSpans(l strided.Layout) byteRuns {
	var all byteRuns
	testutil.LayoutElements(l.Offset, l.Shape, l.Strides, func(a int64) {
		if n := len(all); n > 0 && all[n-1].hi == a {
			all[n-1].hi += l.Elem
			return
		}
		all = append(all, byteRun{a, a + l.Elem})
	})
	slices.SortFunc(all, func(x, y byteRun) int { return cmp.Compare(x.lo, y.lo) })
	var out byteRuns
	for _, x := range all {
		if n := len(out); n > 0 && x.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

func (a byteRuns) meets(b byteRuns) bool {
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i].hi <= b[j].lo:
			i++
		case b[j].hi <= a[i].lo:
			j++
		default:
			return true
		}
	}
	return false
}

// opBytes is what one op reads and writes of one buffer.
type opBytes struct{ read, write []byteRuns }

// byteSets returns, per op of p and per buffer it uses, the bytes it reads
// and writes.
func byteSets(p *trace.Program) []map[int]*opBytes {
	out := make([]map[int]*opBytes, len(p.Ops))
	for k := range p.Ops {
		out[k] = map[int]*opBytes{}
		for _, u := range p.Ops[k].Uses {
			b := u.Ref.Buffer
			if out[k][b] == nil {
				out[k][b] = &opBytes{}
			}
			s := elementSpans(p.Layout(u.Ref))
			if u.Access&trace.AccessRead != 0 {
				out[k][b].read = append(out[k][b].read, s)
			}
			if u.Access&trace.AccessWrite != 0 {
				out[k][b].write = append(out[k][b].write, s)
			}
		}
	}
	return out
}

func anyMeets(a, b []byteRuns) bool {
	for _, x := range a {
		for _, y := range b {
			if x.meets(y) {
				return true
			}
		}
	}
	return false
}

// mustPrecede reports whether op a (earlier) and op b of the input must keep
// their order: b waits on a, or they touch a common byte of one buffer and
// one of them writes it.
func mustPrecede(p *trace.Program, bytes []map[int]*opBytes, a, b int) bool {
	if slices.Contains(p.Ops[b].Waits, a) {
		return true
	}
	for buf, x := range bytes[a] {
		y, ok := bytes[b][buf]
		if !ok {
			continue
		}
		if anyMeets(x.write, y.read) || anyMeets(x.write, y.write) || anyMeets(x.read, y.write) {
			return true
		}
	}
	return false
}

// TestReorderProperty: on random one-engine traces and generated ggml
// graphs, OpDependencies lists exactly the pairs of ops that touch a
// common byte with a write (or wait), every rule's order keeps every pair of ops that touch a common
// byte with a write (and every wait) in input order, the reordered trace
// submits the input's ops unchanged in that order and validates, and
// PlanReordered returns a plan the checker accepts, neither its bound nor
// its size above the fixed order's.
func TestReorderProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var traces []*trace.Trace
	n := 300
	if testing.Short() {
		n = 60
	}
	for range n {
		tr, err := trace.Parse(tracetest.Random(rng, 10+rng.IntN(60)))
		if err != nil {
			t.Fatal(err)
		}
		oneEngine(tr)
		traces = append(traces, tr)
	}
	for _, gp := range ggSpread {
		tr, err := ggmltrace.Import(ggGen(t, gp), gp.String())
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, tr)
	}
	moved, lower := 0, 0
	for i, tr := range traces {
		p, err := tr.Resolve()
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		bytes := byteSets(p)
		checkOpDependencies(t, i, p, bytes)
		for _, rule := range ReorderRules {
			ro, err := Reorder(p, rule)
			if err != nil {
				t.Fatalf("trace %d %v: %v", i, rule, err)
			}
			pos := make([]int, len(p.Ops))
			for at, k := range ro.Order {
				pos[k] = at
			}
			if sorted := slices.Sorted(slices.Values(ro.Order)); !slices.Equal(sorted, identity(len(p.Ops))) {
				t.Fatalf("trace %d %v: order %v is not a permutation", i, rule, ro.Order)
			}
			for b := range p.Ops {
				for a := range b {
					if pos[a] > pos[b] && mustPrecede(p, bytes, a, b) {
						t.Fatalf("trace %d %v: op %q moved after %q, which depends on it", i, rule, p.Ops[a].Name, p.Ops[b].Name)
					}
				}
			}
			if _, err := ro.Trace.Resolve(); err != nil {
				t.Fatalf("trace %d %v: reordered trace invalid: %v", i, rule, err)
			}
			at := 0
			for _, s := range ro.Trace.Steps {
				if s.Kind == trace.KindOp {
					if !s.Equal(tr.Steps[p.Ops[ro.Order[at]].Step]) {
						t.Fatalf("trace %d %v: op %d is %+v, want input op %d", i, rule, at, s, ro.Order[at])
					}
					at++
				}
			}
			if len(ro.Trace.Steps) != len(tr.Steps) {
				t.Fatalf("trace %d %v: %d steps, want %d", i, rule, len(ro.Trace.Steps), len(tr.Steps))
			}
			if !slices.Equal(ro.Order, identity(len(p.Ops))) {
				moved++
			}
		}
		rd, err := PlanReordered(p, Options{Check: true})
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		res := rd.Chosen()
		// No plan of any order is below the order bound: the fixed order's,
		// each rule's, the result.
		ob, err := OrderBound(p)
		if err != nil {
			t.Fatal(err)
		}
		if ob != rd.OrderBound {
			t.Fatalf("trace %d: Reordered.OrderBound %d, OrderBound %d", i, rd.OrderBound, ob)
		}
		heights := []int64{rd.Fixed.Plan.Size, res.Plan.Size}
		for _, rule := range ReorderRules {
			ro, _ := Reorder(p, rule)
			r, err := Plan(ro.Trace, Options{Check: true, Budget: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			heights = append(heights, r.Plan.Size)
		}
		if h := slices.Min(heights); h < ob {
			t.Fatalf("trace %d: a plan of %d bytes is below the order bound %d", i, h, ob)
		}
		checkReordered(t, res.Trace, res.Plan)
		f := rd.Fixed
		if res.bound > f.bound || res.Plan.Size > f.Plan.Size {
			t.Fatalf("trace %d: reordered bound %d plan %d above the fixed order's %d %d", i, res.bound, res.Plan.Size, f.bound, f.Plan.Size)
		}
		if r := rd.Best; r != nil {
			checkReordered(t, r.Trace, r.Plan)
		}
		if rd.Kept {
			lower++
		}
	}
	t.Logf("%d of %d traces planned lower reordered", lower, len(traces))
	if lower == 0 {
		t.Error("no reordering planned lower: PlanReordered never keeps one")
	}
	if moved == 0 {
		t.Error("no rule moved any op: the property is vacuous")
	}
}

// checkOpDependencies: OpDependencies lists exactly the pairs of p's ops
// that must keep their order (trace i of TestReorderProperty).
func checkOpDependencies(t *testing.T, i int, p *trace.Program, bytes []map[int]*opBytes) {
	t.Helper()
	deps := OpDependencies(p)
	for b, d := range deps {
		for k, a := range d {
			if a >= b || k > 0 && d[k-1] >= a {
				t.Fatalf("trace %d: op %q depends on %v: not distinct earlier ops, sorted", i, p.Ops[b].Name, d)
			}
		}
	}
	for b := range p.Ops {
		for a := range b {
			if must, listed := mustPrecede(p, bytes, a, b), slices.Contains(deps[b], a); must != listed {
				t.Fatalf("trace %d: ops %q, %q: must keep their order %v, listed %v", i, p.Ops[a].Name, p.Ops[b].Name, must, listed)
			}
		}
	}
}

// FuzzReorder reorders arbitrary valid traces (on one engine) and plans
// them with PlanReordered: the reordered trace must validate, submit the
// input's ops, and have a plan the checker accepts, neither bound nor size
// above the fixed order's and the size not below OrderBound.
func FuzzReorder(f *testing.F) {
	var buf bytes.Buffer
	if err := trace.Write(&buf, tracetest.Load(f, twoBranchesFile)); err == nil {
		f.Add(buf.Bytes())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		f.Add(tracetest.Random(rng, 40))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Parse(data)
		if err != nil || len(tr.Steps) > 400 {
			return
		}
		oneEngine(tr)
		p, err := tr.Resolve()
		if err != nil {
			return
		}
		for _, rule := range ReorderRules {
			ro, err := Reorder(p, rule)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ro.Trace.Resolve(); err != nil {
				t.Fatalf("%v: reordered trace invalid: %v", rule, err)
			}
		}
		rd, err := PlanReordered(p, Options{Check: true})
		if err != nil {
			if errors.Is(err, ErrInvalidTrace) || errors.Is(err, ErrTooLarge) {
				return
			}
			t.Fatal(err)
		}
		res := rd.Chosen()
		checkReordered(t, res.Trace, res.Plan)
		if f := rd.Fixed; res.bound > f.bound || res.Plan.Size > f.Plan.Size {
			t.Fatalf("reordered bound %d plan %d above the fixed order's %d %d", res.bound, res.Plan.Size, f.bound, f.Plan.Size)
		}
		if res.Plan.Size < rd.OrderBound {
			t.Fatalf("plan %d below the order bound %d", res.Plan.Size, rd.OrderBound)
		}
	})
}
