package ggml_test

import (
	"fmt"
	"os"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// An engine swaps ggml_gallocr for an Allocator: reserve with the largest
// graph, allocate each step's graph, set the inputs, compute.
func Example() {
	m := ggmltest.NewModel(ggmltest.Tiny()) // ggml-tiny: 2 LLaMA-style layers of width 256
	defer m.Free()
	cache := m.NewCache()
	defer cache.Free()
	backend := ggmltest.NewBackend(2)
	defer backend.Free()

	a, err := ggml.New(ggml.Options{}) // ggml_gallocr_new(ggml_backend_cpu_buffer_type())
	if err != nil {
		panic(err)
	}
	defer a.Free()

	g := m.Build(cache, 32, 0) // a 32-token prefill, built in a no_alloc context
	defer g.Free()
	fmt.Println("gallocr's buffer:", g.GallocrSize())
	if err := a.Reserve(g.CGraph()); err != nil { // ggml_gallocr_reserve
		panic(err)
	}
	if err := a.AllocGraph(g.CGraph()); err != nil { // ggml_gallocr_alloc_graph
		panic(err)
	}
	g.SetInputs(m, 1)
	if err := backend.Compute(g); err != nil { // ggml_backend_graph_compute
		panic(err)
	}
	fmt.Println("subarena's buffer:", a.BufferSize())
	st := a.Stats()
	fmt.Println("plans:", st.Plans, "cache hits:", st.Hits)
	// Output:
	// gallocr's buffer: 329856
	// subarena's buffer: 241792
	// plans: 1 cache hits: 1
}

// Plan tells what the Allocator decided for a graph without placing it.
func ExampleAllocator_Plan() {
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 32, 0) // ggml-tiny, a 32-token prefill
	defer mg.Free()
	g := mg.Graph

	for _, noRelayout := range []bool{true, false} {
		a, err := ggml.New(ggml.Options{NoRelayout: noRelayout})
		if err != nil {
			panic(err)
		}
		p, err := a.Plan(g.CGraph())
		if err != nil {
			panic(err)
		}
		fmt.Printf("relayout %-5v size %d bound %d proven %v relaid %v\n", !noRelayout, p.Size, p.LowerBound,
			p.Result.Proven, p.Relaid[:min(2, len(p.Relaid))])
		a.Free()
	}
	// Output:
	// relayout false size 297088 bound 297088 proven true relaid []
	// relayout true  size 241792 bound 241792 proven true relaid [K_rope-0 Q_rope-0]
}

// FirstPlan is the one greedy pass every plan starts from (gallocr's
// reserve, on the planner's liveness): a graph met once the buffer exists
// takes it when it fits, and the planner's plan replaces it wherever the
// planner runs and is lower.
func ExampleAllocator_FirstPlan() {
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 32, 0) // ggml-tiny, a 32-token prefill
	defer mg.Free()
	g := mg.Graph

	a, err := ggml.New(ggml.Options{NoRelayout: true})
	if err != nil {
		panic(err)
	}
	defer a.Free()
	first, err := a.FirstPlan(g.CGraph())
	if err != nil {
		panic(err)
	}
	p, err := a.Plan(g.CGraph())
	if err != nil {
		panic(err)
	}
	fmt.Println("gallocr", g.GallocrSize(), "first plan", first.Size, "planner", p.Size, "kept the first plan", p.OnePass)
	// Output:
	// gallocr 329856 first plan 329856 planner 297088 kept the first plan false
}

// Dump writes a graph as a subarena-trace/v1 document for the subarena
// command (plan, check, viz).
func ExampleDump() {
	mg := ggmltest.NewModelGraph(ggmltest.Tiny(), 32, 0) // ggml-tiny, a 32-token prefill
	defer mg.Free()
	g := mg.Graph

	f, err := os.CreateTemp("", "ggml-tiny-*.json")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	if err := ggml.Dump(f, g.CGraph(), ggml.ReadOptions{Name: "ggml-tiny"}); err != nil {
		panic(err)
	}
	f.Close()

	t, err := ggml.ReadGraph(g.CGraph(), ggml.ReadOptions{Name: "ggml-tiny"})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Name, "granule", t.Granule, "steps", len(t.Steps))
	// Output:
	// ggml-tiny granule 32 steps 178
}
