package ggml_test

import (
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// TestPlanCache alternates a prefill and a decode graph shape, rebuilding
// each graph every step and allocating one graph twice, and requires one
// plan per shape and the bytes of every tensor in its own memory.
func TestPlanCache(t *testing.T) {
	p := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 128, Heads: 4, FF: 344, Layers: 2, Vocab: 64, Ctx: 64, Seqs: 2,
		Attn: ggmltest.AttnSoftMax, KVPad: 32, LastOnly: true, Seed: 5}
	m := ggmltest.NewModel(p)
	defer m.Free()
	be := ggmltest.NewBackend(1)
	defer be.Free()
	// prefills of 8 tokens and single-token decodes, every one attending 32
	// cache positions: two structures
	sched := [][2]int{{8, 0}, {1, 8}, {1, 9}, {8, 16}, {1, 24}, {8, 20}, {1, 10}}
	run := func(md mode, again bool) ([][]byte, []byte, ggml.Stats) {
		a, err := ggml.New(ggml.Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Free()
		outs, cache := computeSteps(t, m, be, sched, 50, func(g *ggmltest.Graph) (free func()) {
			if md == modeOwn {
				if free, err = g.AllocOwn(); err != nil {
					t.Fatal(err)
				}
				return free
			}
			if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatal(err)
			}
			if again {
				if err := a.AllocGraph(g.CGraph()); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		})
		return outs, cache, a.Stats()
	}
	refOuts, refCache, _ := run(modeOwn, false)
	for _, again := range []bool{false, true} {
		outs, cache, st := run(modeSubarena, again)
		for i := range outs {
			if d := ggmltest.DiffBytes(refOuts[i], outs[i]); d != 0 {
				t.Errorf("again=%v step %d: %d bytes differ", again, i, d)
			}
		}
		if d := ggmltest.DiffBytes(refCache, cache); d != 0 {
			t.Errorf("again=%v: KV cache: %d bytes differ", again, d)
		}
		calls := len(sched)
		if again {
			calls *= 2
		}
		if st.Plans != 2 || st.Misses != 2 || st.Hits != calls-2 {
			t.Errorf("again=%v: stats %+v", again, st)
		}
	}
}

// TestFreed: an Allocator refuses work once freed, and Free twice is a no-op.
func TestFreed(t *testing.T) {
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 4, 0)
	defer mg.Free()
	g := mg.Graph
	a, err := ggml.New(ggml.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AllocGraph(g.CGraph()); err != nil {
		t.Fatal(err)
	}
	a.Free()
	a.Free()
	if err := a.AllocGraph(g.CGraph()); err == nil {
		t.Fatal("AllocGraph after Free")
	}
	if _, err := a.Plan(g.CGraph()); err == nil {
		t.Fatal("Plan after Free")
	}
	if err := a.AllocGraph(nil); err == nil {
		t.Fatal("nil graph")
	}
}
