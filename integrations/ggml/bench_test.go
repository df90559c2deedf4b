package ggml_test

import (
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// benchShapes are the graphs the benchmarks allocate (sizing-only weights:
// allocation never reads them).
func benchShapes() []ggmltest.Shape {
	want := map[string]bool{
		"llama-e256-l2-prefill32-b1-maskinf":   true,
		"llama-e1024-l4-prefill128-b1-softmax": true,
		"llama-e1024-l4-decode128-b8-softmax":  true,
		"gpt2-e1024-l4-prefill128-b1-softmax":  true,
	}
	var out []ggmltest.Shape
	for _, s := range ggmltest.Shapes(false) {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

type benchGraph struct {
	m *ggmltest.Model
	c *ggmltest.Cache
	g *ggmltest.Graph
}

func newBenchGraph(s ggmltest.Shape) *benchGraph {
	m := ggmltest.NewModel(s.Params)
	c := m.NewCache()
	return &benchGraph{m: m, c: c, g: m.Build(c, s.Tokens, s.Past)}
}

func (bg *benchGraph) free() {
	bg.g.Free()
	bg.c.Free()
	bg.m.Free()
}

func forShapes(b *testing.B, f func(b *testing.B, bg *benchGraph)) {
	for _, s := range benchShapes() {
		b.Run(s.Name, func(b *testing.B) {
			bg := newBenchGraph(s)
			defer bg.free()
			f(b, bg)
		})
	}
}

// BenchmarkGallocrReserve times ggml_gallocr_reserve on a graph whose buffer
// is already large enough: ggml-alloc's planning.
func BenchmarkGallocrReserve(b *testing.B) {
	forShapes(b, func(b *testing.B, bg *benchGraph) {
		ga := ggmltest.NewGallocr()
		defer ga.Free()
		if err := ga.Reserve(bg.g); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			ga.ReserveCGraph(bg.g.CGraph())
		}
		cpu.report(b)
		b.ReportMetric(float64(ga.Size()), "buffer-bytes")
	})
}

// BenchmarkGallocrAllocGraph times ggml_gallocr_alloc_graph on a fresh copy
// of a graph gallocr has reserved (the graph is cleared each iteration; see
// BenchmarkClear for that part).
func BenchmarkGallocrAllocGraph(b *testing.B) {
	forShapes(b, func(b *testing.B, bg *benchGraph) {
		ga := ggmltest.NewGallocr()
		defer ga.Free()
		if err := ga.Reserve(bg.g); err != nil {
			b.Fatal(err)
		}
		if err := ga.Alloc(bg.g); err != nil {
			b.Fatal(err)
		}
		buf := bg.g.OutputBuffer()
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			bg.g.Clear(buf)
			ga.AllocCGraph(bg.g.CGraph())
		}
		cpu.report(b)
	})
}

// BenchmarkSubarenaHit times AllocGraph on a graph whose plan is cached: one
// pass matching the graph's structure, one placing it (every tensor afresh,
// as in a graph rebuilt in the same context memory). The loop walks the
// graph as BenchmarkGallocrAllocGraph's clears it, at the same cost.
func BenchmarkSubarenaHit(b *testing.B) {
	forShapes(b, func(b *testing.B, bg *benchGraph) {
		a, err := ggml.New(ggml.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Free()
		if err := a.AllocGraph(bg.g.CGraph()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			bg.g.Clear(nil)
			if err := a.AllocGraph(bg.g.CGraph()); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
		if st := a.Stats(); st.Misses != 1 {
			b.Fatalf("stats %+v", st)
		}
		b.ReportMetric(float64(a.BufferSize()), "buffer-bytes")
	})
}

// BenchmarkSubarenaMiss times AllocGraph without a plan cache: reading the
// graph, planning it and placing it.
func BenchmarkSubarenaMiss(b *testing.B) {
	forShapes(b, func(b *testing.B, bg *benchGraph) {
		a, err := ggml.New(ggml.Options{CacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Free()
		if err := a.AllocGraph(bg.g.CGraph()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			bg.g.Clear(nil)
			if err := a.AllocGraph(bg.g.CGraph()); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
}

// BenchmarkClear times clearing a placed graph, which the AllocGraph
// benchmarks of both allocators include.
func BenchmarkClear(b *testing.B) {
	forShapes(b, func(b *testing.B, bg *benchGraph) {
		ga := ggmltest.NewGallocr()
		defer ga.Free()
		if err := ga.Alloc(bg.g); err != nil {
			b.Fatal(err)
		}
		buf := bg.g.OutputBuffer()
		cpu := startCPU(b)
		for b.Loop() {
			bg.g.Clear(buf)
		}
		cpu.report(b)
	})
}
