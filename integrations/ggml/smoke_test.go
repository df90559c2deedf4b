package ggml_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// TestGallocrSmoke computes ggml-tiny's graph with ggml's own graph
// allocator: the build, the backend and the harness work.
func TestGallocrSmoke(t *testing.T) {
	m := ggmltest.NewModel(ggmltest.Tiny())
	defer m.Free()
	c := m.NewCache()
	defer c.Free()
	be := ggmltest.NewBackend(2)
	defer be.Free()
	g := m.Build(c, 32, 0)
	defer g.Free()
	ga := ggmltest.NewGallocr()
	defer ga.Free()
	if err := ga.Alloc(g); err != nil {
		t.Fatal(err)
	}
	g.SetInputs(m, 7)
	if err := be.Compute(g); err != nil {
		t.Fatal(err)
	}
	out := g.Output()
	if len(out) != 256*32*4 {
		t.Fatalf("output %d bytes", len(out))
	}
	nonzero := 0
	for i := 0; i < len(out); i += 4 {
		f := math.Float32frombits(binary.LittleEndian.Uint32(out[i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			t.Fatalf("output[%d] = %v", i/4, f)
		}
		if f != 0 {
			nonzero++
		}
	}
	if nonzero < len(out)/8 {
		t.Fatalf("only %d nonzero outputs", nonzero)
	}
	if bytes.Count(c.Bytes(), []byte{0}) == len(c.Bytes()) {
		t.Fatal("the KV cache was not written")
	}
	t.Logf("gallocr buffer %d bytes, %d nodes", ga.Size(), g.Nodes())
}
