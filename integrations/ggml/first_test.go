package ggml_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
	"github.com/subarena/subarena/trace/plan"
)

// TestFirstPlanChecked plans every ggmlbench graph (-big included unless
// short) and random models' graphs with the first plan alone, checked
// (Options.Check: check.Plan on the graph's trace), and holds it to
// gallocr's buffer on the ggmlbench graphs.
func TestFirstPlanChecked(t *testing.T) {
	for _, sh := range ggmltest.Shapes(!testing.Short()) {
		mg := ggmltest.NewModelGraph(sh.Params, sh.Tokens, sh.Past)
		a, err := ggml.New(ggml.Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.FirstPlan(mg.Graph.CGraph())
		if err != nil {
			t.Fatalf("%s: %v", sh.Name, err)
		}
		g := mg.Graph.GallocrSize()
		t.Logf("%s: first %d gallocr %d (%.3f)", sh.Name, p.Size, g, float64(p.Size)/float64(g))
		if !p.OnePass || p.Size <= 0 || p.Size > g {
			t.Errorf("%s: first plan %+v, gallocr %d", sh.Name, p, g)
		}
		a.Free()
		mg.Free()
	}
	// and random models (randomParams), every option that changes it
	rng := rand.New(rand.NewPCG(28, 2))
	for i := range 24 {
		p := randomParams(rng, uint64(i+1))
		m := ggmltest.NewModel(p)
		c := m.NewCache()
		n, past := 1+rng.IntN(24), rng.IntN(32)
		g := m.Build(c, n, past)
		for _, opts := range []ggml.Options{{Check: true}, {Check: true, NoInPlace: true}} {
			a, err := ggml.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.FirstPlan(g.CGraph()); err != nil {
				t.Errorf("%v, %d+%d tokens, %+v: %v", p, past, n, opts, err)
			}
			a.Free()
		}
		g.Free()
		c.Free()
		m.Free()
	}
}

// TestFirstPlanCheckBites moves one tensor of each graph's first plan onto
// another that is live beside it: the check must reject the plan. Unmoved,
// the plan passes and shares no slot while part of a tensor is live.
func TestFirstPlanCheckBites(t *testing.T) {
	for _, sh := range ggmltest.Shapes(false)[:6] {
		mg := ggmltest.NewModelGraph(sh.Params, sh.Tokens, sh.Past)
		a, err := ggml.New(ggml.Options{})
		if err != nil {
			t.Fatal(err)
		}
		partial, err := ggml.CheckFirstPlan(a, mg.Graph.CGraph(), func([]int64) {})
		if err != nil || partial {
			t.Fatalf("%s: unmoved: partial %v, %v", sh.Name, partial, err)
		}
		// every placed tensor onto the first placed one's offset: some
		// pair of them is live at once
		_, err = ggml.CheckFirstPlan(a, mg.Graph.CGraph(), func(offs []int64) {
			for i := range offs {
				if offs[i] >= 0 {
					offs[i] = 0
				}
			}
		})
		if !errors.Is(err, plan.ErrConflict) {
			t.Errorf("%s: every tensor at offset 0: %v", sh.Name, err)
		}
		a.Free()
		mg.Free()
	}
}

// TestPlanKeepsLowerFirstPlan plans a graph on which the planner's greedy
// placement, under its own in-place choices, is above the first plan
// (found by a random search over randomParams: the roped Q and K and the
// SiLU and GLU outputs it lays over strided parts of the fused products
// leave holes, so that its bound is 71,308 bytes where 52,364 are live at
// once, and without relayout it needs 57,228): Plan keeps the first plan,
// says so (OnePass) with the planner's answer beside it, and the graph
// computes the bytes it computes with every tensor in its own memory.
func TestPlanKeepsLowerFirstPlan(t *testing.T) {
	p := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 64, Heads: 4, FF: 96, Layers: 2, Vocab: 40, Ctx: 64, Seqs: 2,
		Attn: ggmltest.AttnSoftMax, KVPad: 16, Seed: 11}
	sched := [][2]int{{19, 16}}
	m := ggmltest.NewModel(p)
	defer m.Free()
	be := ggmltest.NewBackend(1)
	defer be.Free()
	own := runSteps(t, m, be, modeOwn, ggml.Options{}, sched)
	a, err := ggml.New(ggml.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	outs, _ := computeSteps(t, m, be, sched, 1000, func(g *ggmltest.Graph) func() {
		first, err := a.FirstPlan(g.CGraph())
		if err != nil {
			t.Fatal(err)
		}
		pl, err := a.Plan(g.CGraph())
		if err != nil {
			t.Fatal(err)
		}
		if !pl.OnePass || pl.Size != first.Size || pl.Result.Plan == nil || pl.Result.Plan.Size <= first.Size {
			t.Fatalf("first plan %d, Plan: one pass %v, size %d, the planner's %v", first.Size, pl.OnePass, pl.Size, pl.Result.Plan)
		}
		t.Logf("first plan %d, the planner's %d (its bound under its in-place choices %d)", first.Size,
			pl.Result.Plan.Size, pl.Result.LowerBound)
		if err := a.AllocGraph(g.CGraph()); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); st.Plans != 1 || st.Hits != 1 {
			t.Errorf("stats %+v: want the one plan, placed from the cache", st)
		}
		return nil
	})
	if d := ggmltest.DiffBytes(own.outs[0], outs[0]); d != 0 {
		t.Errorf("%d of %d output bytes differ from own memory", d, len(outs[0]))
	}
}

// TestPlanReplansFirstPlan places a graph with its first plan (AllocGraph
// once a larger graph of another topology sized the buffer), then asks Plan
// for it: the planner runs once, beside the first plan, its answer replaces
// the cached first plan (a second Plan plans nothing), and the graph is
// still placed from the cache.
func TestPlanReplansFirstPlan(t *testing.T) {
	small := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 64, Heads: 4, FF: 96, Layers: 2, Vocab: 40, Ctx: 64,
		Attn: ggmltest.AttnSoftMax, KVPad: 16, Seed: 3}
	wide := small
	wide.Embd, wide.Layers = 256, 3
	a, err := ggml.New(ggml.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	wg := ggmltest.NewModelGraph(wide, 16, 8)
	defer wg.Free()
	if err := a.Reserve(wg.Graph.CGraph()); err != nil {
		t.Fatal(err)
	}
	g := ggmltest.NewModelGraph(small, 16, 8)
	defer g.Free()
	if err := a.AllocGraph(g.Graph.CGraph()); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.FirstPlans != 1 || st.Plans != 2 {
		t.Fatalf("stats %+v: want the reserve's plan and a first plan", st)
	}
	for range 2 {
		p, err := a.Plan(g.Graph.CGraph())
		if err != nil {
			t.Fatal(err)
		}
		if p.Trace == nil || p.Result.Plan == nil || p.FirstPlan <= 0 {
			t.Fatalf("Plan returned %+v, not the planner's answer", p)
		}
	}
	if st := a.Stats(); st.Plans != 3 {
		t.Errorf("stats %+v: want one more plan", st)
	}
	g.Graph.Clear(nil)
	if err := a.AllocGraph(g.Graph.CGraph()); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Plans != 3 || st.Misses != 1 {
		t.Errorf("stats %+v: the graph was planned again", st)
	}
}
