package ggmltest

/*
#include "branches.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Branches is the weights of a graph of independent branches: an input x
// (64×16 floats) feeds n branches, each a 512-wide product, GELU and a
// product back to 64, summed into the output. Build makes its graph in an
// order that computes every branch's wide temporary before reducing any:
// a graph that reordering its nodes shrinks.
type Branches struct {
	b *C.sa_branches
}

// NewBranches makes the weights of n branches (1 to 8), from seed.
func NewBranches(n int, seed uint64) *Branches {
	b := C.sa_branches_new(C.int32_t(n), C.uint64_t(seed))
	if b == nil {
		panic(fmt.Sprintf("ggmltest: %d branches", n))
	}
	return &Branches{b: b}
}

// Build makes a new graph (freeing the last one).
func (b *Branches) Build() {
	C.sa_fixture_free_graph(&b.b.fx)
	C.sa_branches_build(b.b)
}

// CGraph returns the graph of the last Build.
func (b *Branches) CGraph() unsafe.Pointer { return unsafe.Pointer(b.b.fx.gf) }

// Nodes returns the graph's node count.
func (b *Branches) Nodes() int { return int(C.ggml_graph_n_nodes(b.b.fx.gf)) }

// SetInputs writes the input after allocation.
func (b *Branches) SetInputs(seed uint64) { C.sa_branches_set_inputs(b.b, C.uint64_t(seed)) }

// Output returns the output's bytes after compute.
func (b *Branches) Output() []byte { return tensorBytes(b.b.out) }

// AllocOwn gives every tensor of the graph its own bytes.
func (b *Branches) AllocOwn() (free func(), err error) { return allocOwn(&b.b.fx) }

// GallocrSize returns the buffer ggml_gallocr reserves for the graph of
// the last Build, in its current node order.
func (b *Branches) GallocrSize() int64 { return gallocrSize(b.b.fx.gf) }

// Free releases the weights and the graph.
func (b *Branches) Free() { C.sa_branches_free(b.b) }
