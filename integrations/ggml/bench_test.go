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

// BenchmarkSubarenaMiss times AllocGraph without a plan cache once the
// buffer exists: reading the graph, its first plan, the planner's when the
// first does not fit the buffer (the planner's own plan of the graph sized
// it: "first-plans" reports the share of misses the first plan placed),
// and placing it.
func BenchmarkSubarenaMiss(b *testing.B) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		benchAllocGraph(b, mg, ggml.Options{CacheSize: -1}, func(a *ggml.Allocator) {
			st := a.Stats()
			b.ReportMetric(float64(st.FirstPlans)/float64(max(st.Misses-1, 1)), "first-plans")
		})
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

// BenchmarkSubarenaFirstPlan times FirstPlan: reading the graph and its
// first plan, one greedy pass (see the package documentation, "The first
// plan"), against BenchmarkGallocrReserve.
func BenchmarkSubarenaFirstPlan(b *testing.B) {
	benchPlan(b, func(a *ggml.Allocator, graph unsafe.Pointer) (*ggml.Plan, error) { return a.FirstPlan(graph) })
}

// BenchmarkSubarenaPlan times Plan on an Allocator without a plan cache:
// reading the graph, its first plan and the planner's, with no search
// budget (a reserve's final plan). Its allocations per op are the
// planner's per-plan memory.
func BenchmarkSubarenaPlan(b *testing.B) {
	benchPlan(b, func(a *ggml.Allocator, graph unsafe.Pointer) (*ggml.Plan, error) { return a.Plan(graph) })
}

// benchPlan times plan on an Allocator without a plan cache.
func benchPlan(b *testing.B, plan func(a *ggml.Allocator, graph unsafe.Pointer) (*ggml.Plan, error)) {
	forShapes(b, func(b *testing.B, mg *ggmltest.ModelGraph) {
		a, err := ggml.New(ggml.Options{CacheSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer a.Free()
		if _, err := plan(a, mg.Graph.CGraph()); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			if _, err := plan(a, mg.Graph.CGraph()); err != nil {
				b.Fatal(err)
			}
		}
		cpu.report(b)
	})
}
