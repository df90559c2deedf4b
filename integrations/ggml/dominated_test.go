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
		if err := a.Reserve(big.CGraph()); err != nil {
			t.Fatal(err)
		}
		if ok, err := a.Covers(big.CGraph()); err != nil || !ok {
			t.Fatalf("%v: the reserved graph is not covered by its own plan (%v)", p, err)
		}
		big.Free()
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
