package ggml_test

import (
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// TestSizing plans and places (without computing: the weights have no
// memory) every graph ggmlbench measures, up to LLaMA-7B (width 4096, 32
// heads, 32 layers, 512-token prefill) and GPT-2 small with a 1024-token
// prefill, and requires subarena's buffer never to exceed gallocr's
// (ggml_gallocr_reserve_n_size) for the same graph, with offsets only or
// with strided placements. Outside -short every plan also passes
// check.Plan.
func TestSizing(t *testing.T) {
	for _, sh := range ggmltest.Shapes(true) {
		t.Run(sh.Name, func(t *testing.T) {
			m := ggmltest.NewModel(sh.Params)
			defer m.Free()
			c := m.NewCache()
			defer c.Free()
			g := m.Build(c, sh.Tokens, sh.Past)
			defer func() { g.Free() }()
			gsize := g.GallocrSize()
			var sizes [2]int64
			for i, noRelayout := range []bool{true, false} {
				a, err := ggml.New(ggml.Options{NoRelayout: noRelayout, Check: !testing.Short()})
				if err != nil {
					t.Fatal(err)
				}
				p, err := a.Plan(g.CGraph())
				if err != nil {
					t.Fatal(err)
				}
				if err := a.AllocGraph(g.CGraph()); err != nil {
					t.Fatal(err)
				}
				if st := a.Stats(); st.Plans != 1 || st.Hits != 1 {
					t.Errorf("stats %+v", st)
				}
				if p.Size > gsize {
					t.Errorf("noRelayout=%v: subarena %d bytes, gallocr %d", noRelayout, p.Size, gsize)
				}
				if p.Size < p.LowerBound || (p.Result.Proven && p.Size != p.LowerBound) {
					t.Errorf("size %d, bound %d, proven %v", p.Size, p.LowerBound, p.Result.Proven)
				}
				sizes[i] = p.Size
				if !noRelayout {
					t.Logf("gallocr %d offsets %d (%.3f) strided %d (%.3f) bound %d proven %v relaid %d",
						gsize, sizes[0], float64(sizes[0])/float64(gsize), sizes[1], float64(sizes[1])/float64(gsize),
						p.LowerBound, p.Result.Proven, len(p.Relaid))
				}
				a.Free()
				// the graph's tensors point into the freed buffer: build it afresh
				g.Free()
				g = m.Build(c, sh.Tokens, sh.Past)
			}
		})
	}
}
