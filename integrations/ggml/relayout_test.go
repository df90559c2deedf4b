package ggml_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// microRun computes a micro graph once under one allocator and returns its
// outputs (and subarena's plan).
func microRun(t *testing.T, m *ggmltest.Micro, be *ggmltest.Backend, md mode) ([]byte, *ggml.Plan) {
	t.Helper()
	m.Build()
	var p *ggml.Plan
	switch md {
	case modeOwn:
		free, err := m.AllocOwn()
		if err != nil {
			t.Fatal(err)
		}
		defer free()
	case modeGallocr:
		ga := ggmltest.NewGallocr()
		defer ga.Free()
		if !ga.AllocCGraph(m.CGraph()) {
			t.Fatal("gallocr failed")
		}
	case modeSubarena:
		a, err := ggml.New(ggml.Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Free()
		if p, err = a.Plan(m.CGraph()); err != nil {
			t.Fatal(err)
		}
		if err := a.AllocGraph(m.CGraph()); err != nil {
			t.Fatal(err)
		}
	}
	m.SetInputs(11)
	if err := be.ComputeCGraph(m.CGraph()); err != nil {
		t.Fatal(err)
	}
	return m.Outputs(), p
}

// TestRelayoutKernels verifies every kernel the Allocator lets write or read
// a tensor laid over a strided footprint (relayout.go): in a graph where the
// planner lays y = writer(half of x) over that half while the other half
// lives on, and z = reader(y), the relaid plan is taken and the outputs are
// the bytes of ggml_gallocr and of every tensor in its own memory. Each
// writer is tested with the mul_mat and cpy readers, each reader with the
// SiLU and mul writers.
func TestRelayoutKernels(t *testing.T) {
	type wr struct{ w, r int }
	var cases []wr
	for w := range ggmltest.WCount {
		cases = append(cases, wr{w, ggmltest.RMulMat}, wr{w, ggmltest.RCpy})
	}
	for r := range ggmltest.RCount {
		if r != ggmltest.RMulMat && r != ggmltest.RCpy {
			cases = append(cases, wr{ggmltest.WSiLU, r}, wr{ggmltest.WMul, r})
		}
	}
	be := ggmltest.NewBackend(2)
	defer be.Free()
	for _, c := range cases {
		name := fmt.Sprintf("%s-%s", ggmltest.WriterNames[c.w], ggmltest.ReaderNames[c.r])
		t.Run(name, func(t *testing.T) {
			m := ggmltest.NewMicro(c.w, c.r, uint64(7+c.w*16+c.r))
			defer m.Free()
			own, _ := microRun(t, m, be, modeOwn)
			gal, _ := microRun(t, m, be, modeGallocr)
			sub, p := microRun(t, m, be, modeSubarena)
			if !slices.Contains(p.Relaid, "y") {
				t.Errorf("y is not relaid: relaid %v, out of place %v", p.Relaid, p.OutOfPlace)
			}
			if d := ggmltest.DiffBytes(own, gal); d != 0 {
				t.Errorf("gallocr: %d bytes differ", d)
			}
			if d := ggmltest.DiffBytes(own, sub); d != 0 {
				t.Errorf("subarena: %d bytes differ", d)
			}
			t.Logf("relaid %v out of place %v size %d bound %d", p.Relaid, p.OutOfPlace, p.Size, p.LowerBound)
		})
	}
}
