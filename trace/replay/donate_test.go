package replay

import (
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// reshapeRope is llama.cpp's attention layer in miniature: the roped Q (qr) reads its
// matmul output (qc) through a reshape of all of it (qv) after the norm below it (n) is
// released; the flash-attention output (fa), the projection (o) and a wider FFN output
// (g) follow. A second rope (kr) reads one part (k0) of a fused output (kv), and an
// inplace add (y) reads its input whole.
const reshapeRope = `{
  "format": "subarena-trace/v1", "name": "reshape-rope", "granule": 16,
  "engines": ["e"],
  "steps": [
    {"alloc": "x", "size": 16, "shape": [4], "elem": 4},
    {"op": "x", "writes": ["x"]},
    {"alloc": "n", "size": 16, "shape": [4], "elem": 4},
    {"op": "n", "reads": ["x"], "writes": ["n"]},
    {"alloc": "qc", "size": 16, "shape": [4], "elem": 4},
    {"op": "qc", "reads": ["n"], "writes": ["qc"]},
    {"release": "n"},
    {"view": "qv", "of": "qc", "offset": 0, "shape": [2, 2], "strides": [8, 4], "elem": 4},
    {"alloc": "qr", "size": 16, "shape": [2, 2], "elem": 4},
    {"op": "qr", "reads": ["qv"], "writes": ["qr"], "inplace": true},
    {"release": "qc"},
    {"alloc": "fa", "size": 16, "shape": [4], "elem": 4},
    {"op": "fa", "reads": ["qr"], "writes": ["fa"]},
    {"release": "qr"},
    {"alloc": "o", "size": 16, "shape": [4], "elem": 4},
    {"op": "o", "reads": ["fa"], "writes": ["o"]},
    {"release": "fa"},
    {"alloc": "g", "size": 48, "shape": [12], "elem": 4},
    {"op": "g", "reads": ["o", "x"], "writes": ["g"]},
    {"release": "o"},
    {"release": "x"},
    {"alloc": "kv", "size": 32, "shape": [8], "elem": 4},
    {"op": "kv", "reads": ["g"], "writes": ["kv"]},
    {"view": "k0", "of": "kv", "offset": 0, "shape": [4], "strides": [4], "elem": 4},
    {"view": "v0", "of": "kv", "offset": 16, "shape": [4], "strides": [4], "elem": 4},
    {"alloc": "kr", "size": 16, "shape": [4], "elem": 4},
    {"op": "kr", "reads": ["k0"], "writes": ["kr"], "inplace": true},
    {"alloc": "y", "size": 16, "shape": [4], "elem": 4},
    {"op": "y", "reads": ["kr", "v0"], "writes": ["y"], "inplace": true},
    {"release": "kv"},
    {"release": "kr"},
    {"release": "g"},
    {"release": "y"}
  ]
}`

// TestDonationsSkipWholeViews: a read through a view of all of its buffer is not donated
// (ggml's graph allocator never reuses a view's bytes in place), a view that is one part of
// its buffer and a buffer read directly are; and with that, llama.cpp's attention in
// miniature needs no more than ggml's rule gives, where donating qr over qc left it above
// the hole n leaves and the FFN output above the projection.
func TestDonationsSkipWholeViews(t *testing.T) {
	tr, err := trace.Parse([]byte(reshapeRope))
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, tr)
	order, err := trace.NewOrder(p)
	if err != nil {
		t.Fatal(err)
	}
	d := Donations(p, order)
	for name, want := range map[string]bool{"qr": false, "kr": true, "y": true} {
		r, ok := p.Lookup(name)
		if !ok {
			t.Fatalf("no buffer %s", name)
		}
		if got := d[r.Buffer].Op >= 0; got != want {
			t.Errorf("%s donated: %v, want %v", name, got, want)
		}
	}
	res, err := Run(p, Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	// x at 0, n at 16, qc at 32; a fresh qr takes n's hole, fa then qc's bytes, o qr's
	// hole, and g fits above fa at 32: 80 bytes. qr donated over qc leaves fa in n's
	// hole, o above it and g above o: 96.
	if res.HWM > 80 {
		t.Errorf("HWM %d, want at most 80", res.HWM)
	}
}
