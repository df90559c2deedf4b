package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import "unsafe"

// order is the node order Options.Reorder chose for one graph structure.
type order struct {
	structure       // the graph's structure as built
	nodes     []int // nil: the graph's own order
}

// reorder permutes graph's nodes to the order Options.Reorder chose for its
// structure, choosing it (ReorderGraph) on the first graph of the
// structure, and returns it (nil when the graph keeps its own). Its scans
// use a scanner of their own: a.sc keeps the last graph placed, which
// AllocGraph's fast path compares the next graph with.
func (a *Allocator) reorder(graph unsafe.Pointer) ([]int, error) {
	if a.osc == nil {
		sc, err := newScanner(a.buft)
		if err != nil {
			return nil, err
		}
		a.osc = sc
	}
	if err := a.osc.scan(graph); err != nil {
		return nil, err
	}
	if o, ok := a.orders[a.osc.keyHash()]; ok && a.osc.has(&o.structure) {
		if o.nodes != nil {
			if err := permuteNodes((*C.struct_ggml_cgraph)(graph), o.nodes); err != nil {
				return nil, err
			}
		}
		return o.nodes, nil
	}
	st := a.osc.structure()
	opts := a.opts
	opts.Reorder = false
	got, err := ReorderGraph(graph, opts) // permutes graph when it keeps an order
	if err != nil {
		return nil, err
	}
	if a.opts.CacheSize >= 0 {
		if a.orders == nil || len(a.orders) >= a.opts.CacheSize {
			a.orders = map[uint64]*order{}
		}
		a.orders[st.hash] = &order{structure: st, nodes: got.Nodes}
	}
	return got.Nodes, nil
}
