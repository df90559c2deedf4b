package ggml_test

import (
	"slices"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// runReordered is runSteps of the case for the Allocator, with each graph
// reordered by order before it is allocated and computed.
func runReordered(t *testing.T, e *caseEnv, order func(g *ggmltest.Graph)) *run {
	t.Helper()
	a, err := ggml.New(ggml.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	r := &run{}
	r.outs, r.cache = computeSteps(t, e.m, e.be, e.sched, 1000, func(g *ggmltest.Graph) (free func()) {
		order(g)
		if err := a.AllocGraph(g.CGraph()); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	return r
}

// TestReorderGraphBitExact computes LLaMA- and GPT-2-style graphs (prefill
// and decode steps) in their own order with every tensor in its own memory,
// and reordered: by ReorderGraph, and in every order it tries whether kept
// or not, each allocated by the Allocator. Every run gives the same bytes,
// outputs and KV cache. ReorderGraph's plan is never above the fixed
// order's, neither bound nor size.
func TestReorderGraphBitExact(t *testing.T) {
	moved := 0
	for _, cc := range computeCases(true) {
		t.Run(cc.String(), func(t *testing.T) {
			e := newCaseEnv(t, cc)
			runs := map[string]*run{}
			runs["ReorderGraph"] = runReordered(t, e, func(g *ggmltest.Graph) {
				o, err := ggml.ReorderGraph(g.CGraph(), ggml.Options{})
				if err != nil {
					t.Fatal(err)
				}
				f := o.Fixed
				if r := o.Reordered; r != nil {
					t.Logf("%d nodes: fixed bound %d plan %d; reordered (%v) bound %d plan %d; kept %v",
						g.Nodes(), f.LowerBound, f.Size, o.Rule, r.LowerBound, r.Size, o.Nodes != nil)
				}
				if o.Nodes != nil {
					if r := o.Reordered; r.LowerBound > f.LowerBound || r.Size > f.Size {
						t.Errorf("kept a reordering above the fixed order: bound %d plan %d, fixed %d %d", r.LowerBound, r.Size, f.LowerBound, f.Size)
					}
				}
			})
			for k := range 3 {
				name := "order " + string(rune('a'+k))
				runs[name] = runReordered(t, e, func(g *ggmltest.Graph) {
					orders, err := ggml.NodeOrders(g.CGraph())
					if err != nil {
						t.Fatal(err)
					}
					if k < len(orders) {
						moved++
						if err := ggml.PermuteNodes(g.CGraph(), orders[k]); err != nil {
							t.Fatal(err)
						}
					}
				})
			}
			compareRuns(t, e.own, "own memory, fixed order", runs)
		})
	}
	if moved == 0 {
		t.Error("no graph was computed in another order")
	}
}

// TestPermuteNodesRejects: an order that is not a permutation of the
// graph's nodes is refused, and the graph is left as it was.
func TestPermuteNodesRejects(t *testing.T) {
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 4, 0)
	defer mg.Free()
	g := mg.Graph
	n := g.Nodes()
	bad := make([]int, n)
	for _, o := range [][]int{nil, bad, make([]int, n+1)} {
		if err := ggml.PermuteNodes(g.CGraph(), o); err == nil {
			t.Errorf("order of %d nodes accepted", len(o))
		}
	}
}

// branchesOwnOutput builds a graph of br in its own order, gives every
// tensor its own bytes, computes it with inputs from seed and returns its
// output.
func branchesOwnOutput(t *testing.T, br *ggmltest.Branches, be *ggmltest.Backend, seed uint64) []byte {
	t.Helper()
	br.Build()
	free, err := br.AllocOwn()
	if err != nil {
		t.Fatal(err)
	}
	defer free()
	br.SetInputs(seed)
	if err := be.ComputeCGraph(br.CGraph()); err != nil {
		t.Fatal(err)
	}
	return br.Output()
}

// TestReorderGraphBranches: a graph whose independent branches each make a
// wide temporary, built so that all of them are live at once, is reordered
// to run one branch at a time. The reordered plan and bound are lower (1.7
// to 3.7 times), gallocr's buffer for the reordered graph shrinks too, and
// the reordered graph computes the fixed order's bytes.
func TestReorderGraphBranches(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		br := ggmltest.NewBranches(n, uint64(n))
		be := ggmltest.NewBackend(2)
		want := branchesOwnOutput(t, br, be, 9)

		br.Build()
		gallocrFixed := br.GallocrSize()
		o, err := ggml.ReorderGraph(br.CGraph(), ggml.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f, r := o.Fixed, o.Reordered
		if o.Nodes == nil || r == nil || r.Size >= f.Size || r.LowerBound >= f.LowerBound {
			t.Fatalf("%d branches: not reordered lower: fixed %+v reordered %+v", n, f, r)
		}
		// Fixed: x (4 KiB) and every branch's 32 KiB temporary (GELU runs in
		// place). Reordered: while branch i reduces, its temporary, its
		// result, the partial sum and x (still read by the next branches'
		// products) — x is dead by the last branch, so two branches need
		// only 32 + 2×4 KiB. Both plans are at their bounds, and no order
		// is below OrderBound: of any two branches, the one that reduces
		// second holds its temporary and result beside the other's result
		// (what the two-branch plan reaches).
		wantFixed, wantReordered := int64(4096+n*32768), int64(32768+3*4096)
		if n == 2 {
			wantReordered = 32768 + 2*4096
		}
		if f.Size != wantFixed || f.LowerBound != wantFixed || r.Size != wantReordered || r.LowerBound != wantReordered {
			t.Errorf("%d branches: fixed bound %d plan %d, reordered bound %d plan %d; want %d, %d", n,
				f.LowerBound, f.Size, r.LowerBound, r.Size, wantFixed, wantReordered)
		}
		if o.OrderBound > r.Size || o.OrderBound != 32768+2*4096 {
			t.Errorf("%d branches: order bound %d, reordered plan %d", n, o.OrderBound, r.Size)
		}
		gallocrReordered := br.GallocrSize()
		t.Logf("%d branches, %d nodes: fixed bound %d plan %d; reordered (%v) bound %d plan %d; order bound %d; gallocr %d -> %d",
			n, br.Nodes(), f.LowerBound, f.Size, o.Rule, r.LowerBound, r.Size, o.OrderBound, gallocrFixed, gallocrReordered)
		if gallocrReordered >= gallocrFixed {
			t.Errorf("%d branches: gallocr %d on the reordered graph, %d on the fixed one", n, gallocrReordered, gallocrFixed)
		}
		a, err := ggml.New(ggml.Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.AllocGraph(br.CGraph()); err != nil {
			t.Fatal(err)
		}
		if a.BufferSize() < r.Size {
			t.Errorf("%d branches: buffer %d for a plan of %d", n, a.BufferSize(), r.Size)
		}
		br.SetInputs(9)
		if err := be.ComputeCGraph(br.CGraph()); err != nil {
			t.Fatal(err)
		}
		if d := ggmltest.DiffBytes(want, br.Output()); d != 0 {
			t.Errorf("%d branches: %d of %d output bytes differ from the fixed order's", n, d, len(want))
		}
		a.Free()
		be.Free()
		br.Free()
	}
}

// TestAllocGraphReorder: with Options.Reorder, AllocGraph runs the branch
// graph one branch at a time in the reordered graph's buffer, decides the
// order once per graph structure, and every graph computes the fixed
// order's bytes; Plan gives the reordered plan and leaves the graph in its
// own order. On LLaMA- and GPT-2-style steps (which keep their order) the
// outputs and the KV cache are those of every tensor in its own memory.
func TestAllocGraphReorder(t *testing.T) {
	br := ggmltest.NewBranches(3, 3)
	defer br.Free()
	be := ggmltest.NewBackend(2)
	defer be.Free()
	want := branchesOwnOutput(t, br, be, 5)
	a, err := ggml.New(ggml.Options{Reorder: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	br.Build()
	before, err := ggml.NodeOrders(br.CGraph())
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Plan(br.CGraph())
	if err != nil {
		t.Fatal(err)
	}
	if p.Size != 45056 {
		t.Errorf("Plan: %d bytes, want the reordered 45056", p.Size)
	}
	if after, _ := ggml.NodeOrders(br.CGraph()); !slices.EqualFunc(before, after, slices.Equal) {
		t.Error("Plan left the graph reordered")
	}
	decided := ggml.OrderCache(a)
	if len(decided) != 1 {
		t.Fatalf("Plan decided %d orders, want 1", len(decided))
	}
	for i := range 3 {
		br.Build()
		if err := a.AllocGraph(br.CGraph()); err != nil {
			t.Fatal(err)
		}
		br.SetInputs(5)
		if err := be.ComputeCGraph(br.CGraph()); err != nil {
			t.Fatal(err)
		}
		if d := ggmltest.DiffBytes(want, br.Output()); d != 0 {
			t.Errorf("graph %d: %d of %d output bytes differ from the fixed order's", i, d, len(want))
		}
	}
	if got := a.BufferSize(); got != 45056 {
		t.Errorf("buffer %d bytes, want the reordered plan's 45056", got)
	}
	if st := a.Stats(); st.Plans != 1 || st.Misses != 0 {
		t.Errorf("stats %+v: want one plan, made by Plan, then hits", st)
	}
	if got := ggml.OrderCache(a); !slices.Equal(got, decided) {
		t.Errorf("order cache %v after the graphs, want the order Plan decided, %v", got, decided)
	}

	for _, cc := range computeCases(true)[:4] {
		e := newCaseEnv(t, cc)
		re := e.run(t, modeSubarena, ggml.Options{Reorder: true, Check: true})
		compareRuns(t, e.own, "own memory", map[string]*run{cc.String() + " reorder": re})
	}
}
