package ggml_test

import (
	"testing"
	"unsafe"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// TestExclude serves one graph with two Allocators, as gallocr serves two
// buffer ids: each excludes the nodes the other places (alternate nodes),
// and the graph computes what it computes with every tensor in its own
// memory, step after step.
func TestExclude(t *testing.T) {
	cc := ggmltest.Case{Params: ggmltest.Tiny(), Prompt: 5, Decode: 3, Threads: 1}
	e := newCaseEnv(t, cc)
	var as [2]*ggml.Allocator
	for i := range as {
		a, err := ggml.New(ggml.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Free()
		as[i] = a
	}
	placed := [2]int{}
	outs, _ := computeSteps(t, e.m, e.be, e.sched, 1000, func(g *ggmltest.Graph) func() {
		nodes := ggml.GraphNodes(g.CGraph())
		var part [2][]unsafe.Pointer
		for i, n := range nodes {
			part[i%2] = append(part[i%2], n)
		}
		for i, a := range as {
			// allocator i places the nodes of part i: it excludes the other's
			if err := a.Exclude(part[1-i]); err != nil {
				t.Fatal(err)
			}
			if err := a.AllocGraph(g.CGraph()); err != nil {
				t.Fatal(err)
			}
			p, err := a.Plan(g.CGraph())
			if err != nil {
				t.Fatal(err)
			}
			if p.Size > 0 {
				placed[i]++
			}
		}
		return nil
	})
	for i := range e.own.outs {
		if d := ggmltest.DiffBytes(e.own.outs[i], outs[i]); d != 0 {
			t.Errorf("step %d: %d of %d bytes differ from the run with every tensor in its own memory", i, d, len(outs[i]))
		}
	}
	if placed[0] == 0 || placed[1] == 0 {
		t.Errorf("steps where each allocator placed something: %v, want both in every step", placed)
	}
}
