package ggml_test

import (
	"math/rand/v2"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
	"github.com/subarena/subarena/trace/check"
)

// randomParams returns a small random model shape: either architecture,
// every attention variant, batches of one or two sequences, padded cache
// lengths, fused QKV and gate/up split by views.
func randomParams(rng *rand.Rand, seed uint64) ggmltest.Params {
	p := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 64 * (1 + rng.IntN(2)), Heads: 4, FF: 96 + 32*rng.IntN(3),
		Layers: 2, Ctx: 64, Seqs: 1 + rng.IntN(2), Attn: []ggmltest.Attn{ggmltest.AttnMaskInf, ggmltest.AttnSoftMax,
			ggmltest.AttnFlash}[rng.IntN(3)], KVPad: []int{0, 16, 32}[rng.IntN(3)], LastOnly: rng.IntN(2) == 0, Seed: seed}
	if rng.IntN(2) == 0 {
		p.Arch = ggmltest.GPT2
		p.Vocab = 48
	} else if rng.IntN(2) == 0 {
		p.Vocab = 40
	}
	if p.Attn == ggmltest.AttnMaskInf {
		p.KVPad = 0 // diag_mask_inf masks by position: the cache length is exact
	}
	return p
}

// TestDominatedGraphs reserves a random model's graph of N tokens after P
// cached ones, then allocates random smaller steps (n ≤ N tokens after at
// most P+N-n cached ones) with the reserved plan: every graph Covers says
// the plan covers is placed without planning, and the placement passes the
// safety checker (trace/check) on the small graph's own trace — the
// property the package documentation argues under "Dominated graphs".
func TestDominatedGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 6))
	models, steps := 16, 8
	if testing.Short() {
		models = 6
	}
	covered, total := 0, 0
	for i := range models {
		p := randomParams(rng, uint64(i+1))
		m := ggmltest.NewModel(p)
		c := m.NewCache()
		n0 := 8 + rng.IntN(17)
		p0 := rng.IntN(p.Ctx - n0 + 1)
		big := m.Build(c, n0, p0)
		a, err := ggml.New(ggml.Options{NoRelayout: true, Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := a.Reserve(big.CGraph()); err != nil {
				t.Fatal(err)
			}
		} else {
			// the plan to dominate is a first plan: a wider and deeper
			// model's graph (another topology) sizes the buffer, then the
			// graph is placed with its first plan
			wide := p
			wide.Embd *= 4
			wide.Layers++
			wm := ggmltest.NewModel(wide)
			wc := wm.NewCache()
			wg := wm.Build(wc, n0, p0)
			err := a.Reserve(wg.CGraph())
			wg.Free()
			wc.Free()
			wm.Free()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.AllocGraph(big.CGraph()); err != nil {
				t.Fatal(err)
			}
			if st := a.Stats(); st.FirstPlans != 1 {
				t.Fatalf("%v: the graph was not placed with its first plan: %+v", p, st)
			}
		}
		if ok, err := a.Covers(big.CGraph()); err != nil || !ok {
			t.Fatalf("%v: the reserved graph is not covered by its own plan (%v)", p, err)
		}
		big.Free()
		// a larger step is never covered: it is planned
		if n0+1+p0 <= p.Ctx {
			larger := m.Build(c, n0+1, p0)
			if ok, err := a.Covers(larger.CGraph()); err != nil || ok {
				t.Errorf("%v: %d+%d tokens covered by the plan of %d+%d (%v)", p, p0, n0+1, p0, n0, err)
			}
			larger.Free()
		}
		for range steps {
			n := 1 + rng.IntN(n0)
			past := rng.IntN(p0 + n0 - n + 1)
			g := m.Build(c, n, past)
			ok, err := a.Covers(g.CGraph())
			if err != nil {
				t.Fatal(err)
			}
			before := a.Stats()
			if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatalf("%v: %d+%d tokens: %v", p, past, n, err)
			}
			if err := ggml.CheckScan(a); err != nil {
				t.Fatalf("%v: %d+%d tokens: %v", p, past, n, err)
			}
			st := a.Stats()
			total++
			if ok {
				covered++
				if st.Misses != before.Misses || st.Plans != before.Plans {
					t.Errorf("%v: %d+%d tokens: covered, yet planned", p, past, n)
				}
			}
			tr, pl, err := ggml.Placed(a, g.CGraph())
			if err != nil {
				t.Fatal(err)
			}
			prog, err := tr.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			rep, err := check.Plan(prog, pl)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Safe {
				t.Errorf("%v: %d+%d tokens (reserved %d+%d, covered %v): %d violations, first %v", p, past, n, p0, n0, ok,
					len(rep.Violations), rep.Violations[0].String())
			}
			g.Free()
		}
		a.Free()
		c.Free()
		m.Free()
	}
	t.Logf("%d of %d smaller steps placed with the reserved plan", covered, total)
	if covered < total/2 {
		t.Errorf("only %d of %d smaller steps covered by the reserved plan", covered, total)
	}
}

// TestHitState reserves a 16-token prefill, then computes prefills and
// decodes of fewer tokens, each placed by sa_hit_last (HitState) when the
// plan placed last covers it and by AllocGraph otherwise: every output and
// the KV cache are the bytes computed with every tensor in its own memory,
// and, without relayout, after the first step only sa_hit_last places
// graphs, with the reserved plan.
func TestHitState(t *testing.T) {
	for _, opts := range []ggml.Options{{}, {NoRelayout: true}} {
		p := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 128, Heads: 4, FF: 344, Layers: 2, Vocab: 64, Ctx: 64,
			Attn: ggmltest.AttnSoftMax, KVPad: 32, Seed: 9}
		m := ggmltest.NewModel(p)
		be := ggmltest.NewBackend(1)
		sched := [][2]int{{16, 0}, {7, 16}, {9, 23}, {3, 32}, {5, 35}, {16, 40}}
		ref, refCache := computeSteps(t, m, be, sched, 7, func(g *ggmltest.Graph) func() {
			free, err := g.AllocOwn()
			if err != nil {
				t.Fatal(err)
			}
			return free
		})
		a, err := ggml.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		c := m.NewCache()
		big := m.Build(c, 16, 48)
		if err := a.Reserve(big.CGraph()); err != nil {
			t.Fatal(err)
		}
		big.Free()
		c.Free()
		fast := 0
		outs, cache := computeSteps(t, m, be, sched, 7, func(g *ggmltest.Graph) func() {
			if ggml.HitLast(a, g.CGraph()) == 1 {
				fast++
			} else if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatal(err)
			}
			if err := ggml.CheckScan(a); err != nil {
				t.Fatal(err)
			}
			return nil
		})
		for i := range outs {
			if d := ggmltest.DiffBytes(ref[i], outs[i]); d != 0 {
				t.Errorf("%+v: step %d: %d bytes differ", opts, i, d)
			}
		}
		if d := ggmltest.DiffBytes(refCache, cache); d != 0 {
			t.Errorf("%+v: KV cache: %d bytes differ", opts, d)
		}
		// A relaid tensor keeps its planned sizes only: with relayout, the
		// smaller steps are planned (and placed correctly all the same).
		if st := a.Stats(); opts.NoRelayout && (fast != len(sched)-1 || st.Plans != 1) {
			t.Errorf("%+v: %d of %d steps placed by sa_hit_last, stats %+v", opts, fast, len(sched), st)
		}
		a.Free()
		be.Free()
		m.Free()
	}
}
