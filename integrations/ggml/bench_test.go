package ggml_test

import (
	"testing"
	"unsafe"

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
		"llama-e1024-l4-prefill128-b8-softmax": true,
	}
	var out []ggmltest.Shape
	for _, s := range ggmltest.Shapes(false) {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

func forShapes(b *testing.B, f func(b *testing.B, mg *ggmltest.ModelGraph)) {
	for _, s := range benchShapes() {
		b.Run(s.Name, func(b *testing.B) {
			mg := ggmltest.NewModelGraph(s.Params, s.Tokens, s.Past)
			defer mg.Free()
			f(b, mg)
		})
	}
}

// reservedGallocr returns a gallocr, freed when the benchmark ends, that has
// reserved g.
func reservedGallocr(b *testing.B, g *ggmltest.Graph) *ggmltest.Gallocr {
	b.Helper()
	ga := ggmltest.NewGallocr()
	b.Cleanup(ga.Free)
	if err := ga.Reserve(g); err != nil {
		b.Fatal(err)
	}
	return ga
}

// placedGallocr returns a gallocr, freed when the benchmark ends, that has
// reserved and allocated g, and the buffer g's output is in.
func placedGallocr(b *testing.B, g *ggmltest.Graph) (*ggmltest.Gallocr, unsafe.Pointer) {
	b.Helper()
	ga := reservedGallocr(b, g)
	if err := ga.Alloc(g); err != nil {
		b.Fatal(err)
	}
	return ga, g.OutputBuffer()
}

// BenchmarkGallocrReserve times ggml_gallocr_reserve on a graph whose buffer
// is already large enough: ggml-alloc's planning.
func BenchmarkGallocrReserve(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		ga := reservedGallocr(b, mg.Graph)
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			ga.ReserveCGraph(mg.Graph.CGraph())
		}
		cpu.report(b)
		b.ReportMetric(float64(ga.Size()), "buffer-bytes")
	})
}

// BenchmarkGallocrAllocGraph times ggml_gallocr_alloc_graph on a fresh copy
// of a graph gallocr has reserved (the graph is cleared each iteration; see
// BenchmarkClear for that part).
func BenchmarkGallocrAllocGraph(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		ga, buf := placedGallocr(b, mg.Graph)
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			mg.Graph.Clear(buf)
			ga.AllocCGraph(mg.Graph.CGraph())
		}
		cpu.report(b)
	})
}

// BenchmarkSubarenaHit times AllocGraph on a graph whose plan is cached: one
// pass matching the graph's structure, one placing it (every tensor afresh,
// as in a graph rebuilt in the same context memory). The loop walks the
// graph as BenchmarkGallocrAllocGraph's clears it, at the same cost.
func BenchmarkSubarenaHit(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		benchAllocGraph(b, mg, ggml.Options{}, func(a *ggml.Allocator) {
			if st := a.Stats(); st.Misses != 1 {
				b.Fatalf("stats %+v", st)
			}
			b.ReportMetric(float64(a.BufferSize()), "buffer-bytes")
		})
	})
}

// BenchmarkSubarenaMiss times AllocGraph without a plan cache: reading the
// graph, planning it and placing it.
func BenchmarkSubarenaMiss(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		benchAllocGraph(b, mg, ggml.Options{CacheSize: -1}, nil)
	})
}

// benchAllocGraph times AllocGraph of the graph, cleared each iteration, on
// an allocator made with opts that has allocated it once before the timer;
// after, when not nil, is called with the allocator once the loop is done.
func benchAllocGraph(b *testing.B, mg *ggmltest.ModelGraph, opts ggml.Options, after func(a *ggml.Allocator)) {
	b.Helper()
	a, err := ggml.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Free()
	if err := a.AllocGraph(mg.Graph.CGraph()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		mg.Graph.Clear(nil)
		if err := a.AllocGraph(mg.Graph.CGraph()); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
	if after != nil {
		after(a)
	}
}

// BenchmarkClear times clearing a placed graph, which the AllocGraph
// benchmarks of both allocators include.
func BenchmarkClear(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		_, buf := placedGallocr(b, mg.Graph)
		cpu := startCPU(b)
		for b.Loop() {
			mg.Graph.Clear(buf)
		}
		cpu.report(b)
	})
}

// BenchmarkSubarenaFirstPlan times Plan on an Allocator without a plan
// cache: reading the graph and planning it with no search budget, the
// first safe plan of a miss. Its allocations per op are the planner's
// per-plan memory.
func BenchmarkSubarenaFirstPlan(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		a, err := ggml.New(ggml.Options{CacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Free()
		if _, err := a.Plan(mg.Graph.CGraph()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			if _, err := a.Plan(mg.Graph.CGraph()); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
}
