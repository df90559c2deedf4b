package plan

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestOrderBoundEveryOrder: on small random one-engine traces (inplace
// ops, strided views, holds), no plan of any order of the ops that keeps
// OpDependencies is below OrderBound: every such order is enumerated,
// laid out as Reorder lays out its own, and planned with a search.
func TestOrderBoundEveryOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 29))
	n := 400
	if testing.Short() {
		n = 100
	}
	tight, checked, orders := 0, 0, 0
	for i := 0; checked < n; i++ {
		tr, err := trace.Parse(tracetest.Random(rng, 8+rng.IntN(20)))
		if err != nil {
			t.Fatal(err)
		}
		oneEngine(tr)
		p, err := tr.Resolve()
		if err != nil || len(p.Ops) < 2 || len(p.Ops) > 8 {
			continue
		}
		checked++
		ob, err := OrderBound(p)
		if err != nil {
			t.Fatal(err)
		}
		g := newDepGraph(p.Clone())
		lowest := int64(-1)
		for _, order := range topoOrders(g.pred, 400) {
			rt, err := g.steps(order)
			if err != nil {
				t.Fatalf("trace %d order %v: %v", i, order, err)
			}
			res, err := Plan(rt, Options{Budget: 2 * time.Millisecond})
			if err != nil {
				t.Fatalf("trace %d order %v: %v", i, order, err)
			}
			if res.Plan.Size < ob {
				t.Fatalf("trace %d: order %v planned in %d bytes, below the order bound %d", i, order, res.Plan.Size, ob)
			}
			if lowest < 0 || res.Plan.Size < lowest {
				lowest = res.Plan.Size
			}
			orders++
		}
		if lowest == ob {
			tight++
		}
	}
	t.Logf("%d traces, %d orders: the order bound met by a plan on %d", checked, orders, tight)
	if tight == 0 {
		t.Error("no plan meets the order bound: the bound is never tight")
	}
}

// topoOrders returns up to limit orders of the ops that keep each after
// the ops pred lists for it.
func topoOrders(pred [][]int32, limit int) [][]int {
	n := len(pred)
	var out [][]int
	done := make([]bool, n)
	order := make([]int, 0, n)
	var walk func()
	walk = func() {
		if len(out) >= limit {
			return
		}
		if len(order) == n {
			out = append(out, append([]int(nil), order...))
			return
		}
		for k := range n {
			if done[k] {
				continue
			}
			ready := true
			for _, j := range pred[k] {
				ready = ready && done[j]
			}
			if !ready {
				continue
			}
			done[k] = true
			order = append(order, k)
			walk()
			order = order[:len(order)-1]
			done[k] = false
		}
	}
	walk()
	return out
}

// TestOrderBoundHoles: when the scores run, in any order, the Q rows of
// the fused projection pin its span (3×192 + 64 bytes) beside the scores
// (1024) and x (256), neither of which fits in a 128-byte gap: 1920 bytes,
// what the plan reaches, where the bytes held alone are 1536.
func TestOrderBoundHoles(t *testing.T) {
	p := tracetest.Program(t, fusedQKVFile)
	ob, err := OrderBound(p)
	if err != nil {
		t.Fatal(err)
	}
	if ob != 1920 {
		t.Errorf("order bound %d, want 1920", ob)
	}
	rd, err := PlanReordered(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res := rd.Chosen(); res.Plan.Size != 1920 || rd.OrderBound != 1920 {
		t.Errorf("plan %d, order bound %d: want both 1920", res.Plan.Size, rd.OrderBound)
	}
}

// TestOrderBoundRelaid: a buffer laid over a strided footprint is not
// rigid, and OrderBound counts no run of it beside the holes it sits in.
// While the scores run, the K and V rows of the projection are held (the
// copies read the scores too) and the rope's output sits in the Q rows'
// gaps: 768 + 1024 + 256 bytes, what the plan reaches; counting the rope's
// output as one run beside the K and V rows' span would give 2240.
func TestOrderBoundRelaid(t *testing.T) {
	p := tracetest.Program(t, relaidRopeFile)
	rd, err := PlanReordered(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := rd.Chosen()
	if !slices.Equal(res.Relaid, []string{"qr"}) || res.Plan.Size != 2048 {
		t.Fatalf("plan %d relaying %v, want 2048 relaying qr", res.Plan.Size, res.Relaid)
	}
	if rd.OrderBound != 2048 {
		t.Errorf("order bound %d, want 2048", rd.OrderBound)
	}
}

// TestOrderBoundHeldDiscard: bytes of a buffer held to the end go when a
// discarded view of them does. While the last op runs, t (1024), y (64)
// and the half it writes (128) are live, and the scratch half, discarded
// after its reduction, is not: 1216, what the plan reaches (counting the
// scratch bytes as held would give 1344).
func TestOrderBoundHeldDiscard(t *testing.T) {
	p := tracetest.Program(t, heldDiscardFile)
	rd, err := PlanReordered(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res := rd.Chosen(); res.Plan.Size != 1216 || rd.OrderBound != 1216 {
		t.Errorf("plan %d, order bound %d: want both 1216", res.Plan.Size, rd.OrderBound)
	}
}

// TestOrderBoundInplaceWritesInput: an inplace op's output may take the
// bytes of an input the op writes too, so the op's writes to the two
// count once: 256 bytes, what the plan reaches (the sum of the writes
// would give 512).
func TestOrderBoundInplaceWritesInput(t *testing.T) {
	p := tracetest.Program(t, inplaceWritesInputFile)
	rd, err := PlanReordered(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res := rd.Chosen(); res.Plan.Size != 256 || res.InPlace != 1 || rd.OrderBound != 256 {
		t.Errorf("plan %d with %d in place, order bound %d: want 256, 1 and 256", res.Plan.Size, res.InPlace, rd.OrderBound)
	}
}
