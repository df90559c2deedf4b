package ggml_test

import (
	"slices"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// mode is how a run allocates its graphs.
type mode int

const (
	modeSubarena mode = iota // ggml.Allocator
	modeGallocr              // ggml_gallocr_alloc_graph
	modeOwn                  // every tensor its own bytes
	modeDirect               // ggml.Allocator, AllocGraph alone: misses once the buffer exists take the first plan when it fits
)

func (m mode) String() string { return [...]string{"subarena", "gallocr", "own", "direct"}[m] }

// run is one allocator's pass over a sequence of steps.
type run struct {
	outs  [][]byte // per step
	cache []byte   // the KV cache after the last step
	// subarena only: per step, the plan's size and gallocr's size for the
	// same graph, and the allocator's counters at the end
	planSize, gallocrSize, bound []int64
	relaid                       [][]string
	stats                        ggml.Stats
}

func runSteps(t testing.TB, m *ggmltest.Model, be *ggmltest.Backend, md mode, opts ggml.Options, sched [][2]int) *run {
	t.Helper()
	r := &run{}
	var a *ggml.Allocator
	var ga *ggmltest.Gallocr
	switch md {
	case modeSubarena, modeDirect:
		var err error
		if a, err = ggml.New(opts); err != nil {
			t.Fatal(err)
		}
		defer a.Free()
	case modeGallocr:
		ga = ggmltest.NewGallocr()
		defer ga.Free()
	}
	r.outs, r.cache = computeSteps(t, m, be, sched, 1000, func(g *ggmltest.Graph) (free func()) {
		switch md {
		case modeSubarena:
			p, err := a.Plan(g.CGraph())
			if err != nil {
				t.Fatal(err)
			}
			r.planSize = append(r.planSize, p.Size)
			r.bound = append(r.bound, p.LowerBound)
			r.relaid = append(r.relaid, p.Relaid)
			r.gallocrSize = append(r.gallocrSize, g.GallocrSize())
			if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatal(err)
			}
		case modeDirect:
			if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatal(err)
			}
		case modeGallocr:
			if err := ga.Alloc(g); err != nil {
				t.Fatal(err)
			}
		case modeOwn:
			var err error
			if free, err = g.AllocOwn(); err != nil {
				t.Fatal(err)
			}
		}
		return free
	})
	if a != nil {
		r.stats = a.Stats()
	}
	return r
}

// computeSteps builds the graph of each step of sched on a fresh KV cache of
// m, lets alloc place it, sets its inputs from seed+i (step i) and computes
// it; free, when alloc returns one, is called once the step's output is
// read. It returns every step's output and the KV cache after the last step.
func computeSteps(t testing.TB, m *ggmltest.Model, be *ggmltest.Backend, sched [][2]int, seed uint64,
	alloc func(g *ggmltest.Graph) (free func())) (outs [][]byte, cache []byte) {
	t.Helper()
	c := m.NewCache()
	defer c.Free()
	for i, st := range sched {
		g := m.Build(c, st[0], st[1])
		free := alloc(g)
		g.SetInputs(m, seed+uint64(i))
		if err := be.Compute(g); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, g.Output())
		if free != nil {
			free()
		}
		g.Free()
	}
	return outs, c.Bytes()
}

// caseEnv is a case's model and backend, its steps and their run with
// every tensor in its own memory.
type caseEnv struct {
	m     *ggmltest.Model
	be    *ggmltest.Backend
	sched [][2]int
	own   *run
}

// newCaseEnv makes cc's model and backend, freed when the test ends, and
// runs cc's steps with every tensor in its own memory.
func newCaseEnv(t testing.TB, cc ggmltest.Case) *caseEnv {
	t.Helper()
	e := &caseEnv{m: ggmltest.NewModel(cc.Params), be: ggmltest.NewBackend(cc.Threads), sched: cc.Steps()}
	t.Cleanup(func() {
		e.be.Free()
		e.m.Free()
	})
	e.own = runSteps(t, e.m, e.be, modeOwn, ggml.Options{}, e.sched)
	return e
}

// run runs the case's steps allocated as md says (opts for the Allocator).
func (e *caseEnv) run(t testing.TB, md mode, opts ggml.Options) *run {
	t.Helper()
	return runSteps(t, e.m, e.be, md, opts, e.sched)
}

// compareRuns checks that every run produced the reference's bytes.
func compareRuns(t testing.TB, ref *run, refName string, others map[string]*run) {
	t.Helper()
	for name, r := range others {
		for i := range ref.outs {
			if d := ggmltest.DiffBytes(ref.outs[i], r.outs[i]); d != 0 {
				t.Errorf("step %d: %s output: %d of %d bytes differ from %s", i, name, d, len(ref.outs[i]), refName)
			}
		}
		if d := ggmltest.DiffBytes(ref.cache, r.cache); d != 0 {
			t.Errorf("%s KV cache: %d of %d bytes differ from %s", name, d, len(ref.cache), refName)
		}
	}
}

func computeCases(short bool) []ggmltest.Case {
	L, G := ggmltest.LLaMA, ggmltest.GPT2
	mi, sm, fl := ggmltest.AttnMaskInf, ggmltest.AttnSoftMax, ggmltest.AttnFlash
	P := func(arch ggmltest.Arch, e, h, f, l, b int, attn ggmltest.Attn, pad int) ggmltest.Params {
		v := 0
		if arch == G {
			v = 96
		}
		return ggmltest.Params{Arch: arch, Embd: e, Heads: h, FF: f, Layers: l, Vocab: v, Ctx: 48, Seqs: b,
			Attn: attn, KVPad: pad, Seed: uint64(e*7 + l*3 + b)}
	}
	split := func(p ggmltest.Params) ggmltest.Params { // llama.cpp's form: separate Q/K/V, gate/up and GLU
		p.Split = true
		return p
	}
	C := func(p ggmltest.Params, prompt, decode, threads int) ggmltest.Case {
		return ggmltest.Case{Params: p, Prompt: prompt, Decode: decode, Threads: threads}
	}
	cs := []ggmltest.Case{
		C(ggmltest.Tiny(), 32, 0, 2),
		C(P(L, 256, 4, 688, 2, 1, mi, 8), 16, 3, 2),
		C(P(L, 128, 4, 344, 3, 8, sm, 8), 8, 3, 1),
		C(P(L, 128, 2, 344, 2, 1, fl, 0), 12, 2, 2),
		C(P(L, 128, 4, 344, 1, 8, fl, 8), 6, 2, 2),
		C(P(G, 128, 4, 512, 2, 1, sm, 8), 10, 3, 1),
		C(P(G, 128, 4, 512, 2, 8, sm, 0), 5, 2, 2),
		C(P(G, 64, 2, 256, 6, 1, fl, 8), 9, 3, 2),
		C(P(G, 96, 3, 384, 1, 8, mi, 0), 7, 1, 1),
		C(P(L, 256, 4, 688, 6, 1, mi, 8), 16, 2, 1),
		C(split(P(L, 128, 2, 344, 2, 1, fl, 0)), 12, 2, 2),
		C(split(P(L, 128, 4, 344, 2, 8, sm, 8)), 8, 2, 1),
	}
	if !short {
		cs = append(cs,
			C(P(L, 1024, 8, 2816, 1, 1, sm, 8), 16, 2, 2),
			C(P(G, 1024, 16, 4096, 1, 8, fl, 8), 4, 2, 2),
			C(P(L, 512, 8, 1376, 4, 8, mi, 16), 12, 2, 2),
		)
	}
	return cs
}

// TestAllocGraphBitExact computes decoder graphs (prefill and decode, LLaMA
// style with fused or separate QKV and gate/up (GGML_OP_GLU), GPT-2 style, softmax and flash attention, batch 1 and 8, 1 to 6
// layers, 1 or 2 threads) with subarena's AllocGraph, with ggml_gallocr and
// with every tensor in its own memory, and requires the same bytes from all
// three: every step's output and the KV cache. subarena's buffer is never
// larger than gallocr's for the same graph.
//
// A fourth run calls AllocGraph alone, so that every graph after the first
// that its cached plans do not cover is placed with its first plan when
// that fits the buffer (checked, as Options.Check asks): the same bytes
// again, and some case must take that path.
func TestAllocGraphBitExact(t *testing.T) {
	firstPlans := 0
	t.Cleanup(func() {
		if !t.Failed() && firstPlans == 0 {
			t.Error("no graph was placed with its first plan")
		}
	})
	for _, cc := range computeCases(testing.Short()) {
		t.Run(cc.String(), func(t *testing.T) {
			e := newCaseEnv(t, cc)
			sched := e.sched
			gal := e.run(t, modeGallocr, ggml.Options{})
			off := e.run(t, modeSubarena, ggml.Options{Check: true, NoRelayout: true})
			rel := e.run(t, modeSubarena, ggml.Options{Check: true})
			direct := e.run(t, modeDirect, ggml.Options{Check: true})
			firstPlans += direct.stats.FirstPlans
			compareRuns(t, e.own, "own memory", map[string]*run{"gallocr": gal, "subarena offsets": off, "subarena": rel,
				"subarena, AllocGraph alone": direct})
			for i := range sched {
				for _, r := range []*run{off, rel} {
					if r.planSize[i] > r.gallocrSize[i] {
						t.Errorf("step %d: subarena needs %d bytes, gallocr %d", i, r.planSize[i], r.gallocrSize[i])
					}
				}
				t.Logf("step %v: gallocr %d, offsets %d (%.3f), strided %d (%.3f) bound %d relaid %v", sched[i],
					rel.gallocrSize[i], off.planSize[i], float64(off.planSize[i])/float64(off.gallocrSize[i]),
					rel.planSize[i], float64(rel.planSize[i])/float64(rel.gallocrSize[i]), rel.bound[i], rel.relaid[i])
			}
			t.Logf("stats %+v; AllocGraph alone %+v", rel.stats, direct.stats)
			if cc.Params.Arch == ggmltest.LLaMA && !cc.Params.Split && cc.Params.Attn == ggmltest.AttnFlash && !slices.Contains(rel.relaid[0], "Q_rope-0") {
				// flash attention reading q, a permuted view of a relaid Q_rope, is verified here
				t.Errorf("prefill: Q_rope-0 not relaid: %v", rel.relaid[0])
			}
		})
	}
}
