package ggml

/*
#include <stdlib.h>
#include <string.h>
#include "sa_ggml.h"

// sa_permute_nodes puts node order[i] of g at position i.
static int sa_permute_nodes(struct ggml_cgraph * g, const int32_t * order, int32_t n) {
    if (n != ggml_graph_n_nodes(g)) {
        return -1;
    }
    struct ggml_tensor ** nodes = ggml_graph_nodes(g);
    struct ggml_tensor ** tmp = (struct ggml_tensor **) malloc((size_t) n * sizeof(*tmp) + 1);
    if (tmp == NULL) {
        return -2;
    }
    for (int32_t i = 0; i < n; i++) {
        tmp[i] = nodes[order[i]];
    }
    memcpy(nodes, tmp, (size_t) n * sizeof(*tmp));
    free(tmp);
    return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/plan"
)

// GraphOrder is what ReorderGraph decided for a graph.
type GraphOrder struct {
	// Nodes is the graph's new node order: Nodes[i] is the index, in the
	// order the graph had, of the node now computed i-th. Nil when the
	// graph was left in its own order.
	Nodes []int
	// Rule is the list-scheduling rule that chose Nodes.
	Rule plan.ReorderRule
	// Fixed is the Allocator's plan of the graph in its own order; Reordered
	// that of the best reordering tried (nil when every rule kept the
	// order). The graph is reordered when Reordered's bound and size are
	// both at most Fixed's and one is lower.
	Fixed, Reordered *Plan
	// OrderBound is plan.OrderBound of the graph's trace: no plan of the
	// graph in any order its dependencies allow is below it (0 when the
	// graph has too many nodes to compute it).
	OrderBound int64
}

// ReorderGraph reorders graph's nodes in place, when that lowers the
// buffer it needs: ggml computes the nodes in graph order, but any order
// that keeps every node after the nodes whose results it reads, and every
// write to bytes after the reads and writes of them that came before (the
// KV-cache copies and their readers), computes the same bytes.
//
// It reads the graph as ReadGraph does, lists the op orders of
// plan.Reorder's rules (memory-aware list scheduling), and plans the graph
// in each with an Allocator of opts, as AllocGraph would: the graph keeps
// the best order only if neither the planner's bound nor the plan is above
// those of its own order. View nodes (which compute nothing) go right
// before the first node that reads them. Allocate the graph afterwards
// (with an Allocator of the same options, AllocGraph plans it in its new
// order); ggml_gallocr also works on a reordered graph.
//
// A graph that lists a tensor twice among its nodes is left as it is.
func ReorderGraph(graph unsafe.Pointer, opts Options) (*GraphOrder, error) {
	if graph == nil {
		return nil, fmt.Errorf("%w: nil graph", ErrGraph)
	}
	opts.CacheSize = -1
	a, err := New(opts)
	if err != nil {
		return nil, err
	}
	defer a.Free()
	fixed, err := a.Plan(graph)
	if err != nil {
		return nil, err
	}
	out := &GraphOrder{Fixed: fixed}
	prog, err := fixed.Trace.Resolve()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	if out.OrderBound, err = plan.OrderBound(prog); err != nil && !errors.Is(err, plan.ErrTooLarge) {
		return nil, err
	}
	orders, rules, err := nodeOrders(graph, a.buft, fixed.Trace)
	if err != nil {
		return nil, err
	}
	g := (*C.struct_ggml_cgraph)(graph)
	var best []int
	for i, nodes := range orders {
		if err := permuteNodes(g, nodes); err != nil {
			return nil, err
		}
		p, err := a.Plan(graph)
		if err := errors2(err, permuteNodes(g, inverse(nodes))); err != nil {
			return nil, err
		}
		if r := out.Reordered; r == nil || p.LowerBound < r.LowerBound || p.LowerBound == r.LowerBound && p.Size < r.Size {
			out.Reordered, out.Rule, best = p, rules[i], nodes
		}
	}
	if r := out.Reordered; r != nil && r.LowerBound <= fixed.LowerBound && r.Size <= fixed.Size &&
		(r.LowerBound < fixed.LowerBound || r.Size < fixed.Size) {
		if err := permuteNodes(g, best); err != nil {
			return nil, err
		}
		out.Nodes = best
	}
	return out, nil
}

// errors2 returns the first non-nil error of a and b.
func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func isIdentity(o []int) bool {
	for i, k := range o {
		if i != k {
			return false
		}
	}
	return true
}

func inverse(o []int) []int {
	inv := make([]int, len(o))
	for i, k := range o {
		inv[k] = i
	}
	return inv
}

// PermuteNodes puts node order[i] of graph (a struct ggml_cgraph *) at
// position i: order must be a permutation of the graph's node indices.
// ReorderGraph applies its order with it; tests use it to run a graph in
// any order.
func PermuteNodes(graph unsafe.Pointer, order []int) error {
	if graph == nil {
		return fmt.Errorf("%w: nil graph", ErrGraph)
	}
	seen := make([]bool, len(order))
	for _, k := range order {
		if k < 0 || k >= len(order) || seen[k] {
			return fmt.Errorf("%w: node order %v is not a permutation", ErrGraph, order)
		}
		seen[k] = true
	}
	return permuteNodes((*C.struct_ggml_cgraph)(graph), order)
}

func permuteNodes(g *C.struct_ggml_cgraph, order []int) error {
	o := make([]int32, len(order))
	for i, k := range order {
		o[i] = int32(k)
	}
	var ptr *C.int32_t
	if len(o) > 0 {
		ptr = (*C.int32_t)(unsafe.Pointer(&o[0]))
	}
	switch C.sa_permute_nodes(g, ptr, C.int32_t(len(o))) {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("%w: %d nodes in the order, %d in the graph", ErrGraph, len(o), int(C.ggml_graph_n_nodes(g)))
	default:
		return fmt.Errorf("%w: out of memory", ErrGraph)
	}
}

// nodeOrders returns the distinct node orders of graph, other than its own,
// that plan.Reorder's rules give its trace t (as ReadGraph reads it with
// buffer type buft), each with the first rule that gave it. It returns none
// for a graph that lists a tensor twice.
func nodeOrders(graph, buft unsafe.Pointer, t *trace.Trace) ([][]int, []plan.ReorderRule, error) {
	g := (*C.struct_ggml_cgraph)(graph)
	n := int(C.ggml_graph_n_nodes(g))
	sc, err := newScanner(buft)
	if err != nil {
		return nil, nil, err
	}
	defer sc.free()
	if err := sc.scan(graph); err != nil {
		return nil, nil, err
	}
	ts, _ := sc.tensors()
	nodeOf := make(map[string]int32, n) // op name → tensor position
	tensorOf := make([]int32, n)        // node → tensor position
	count := 0
	for i := range ts {
		if k := ts[i].exec; k >= 0 && int(k) < n {
			tensorOf[k] = int32(i)
			count++
			if ts[i].isOp() {
				nodeOf[ts[i].name] = int32(i)
			}
		}
	}
	if count != n {
		return nil, nil, nil
	}
	prog, err := t.Resolve()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrGraph, err)
	}
	var orders [][]int
	var rules []plan.ReorderRule
	for _, rule := range plan.ReorderRules {
		ro, err := plan.Reorder(prog, rule)
		if err != nil {
			return nil, nil, fmt.Errorf("ggml: reordering %q: %w", t.Name, err)
		}
		nodes := make([]int, 0, n)
		seen := make([]bool, n)
		// A node goes after the nodes it reads or views: views compute
		// nothing, and go right before their first reader.
		var place func(i int32)
		place = func(i int32) {
			x := &ts[i]
			if x.exec < 0 || seen[x.exec] {
				return
			}
			seen[x.exec] = true
			for _, s := range x.src {
				if s >= 0 {
					place(s)
				}
			}
			if x.viewSrc >= 0 {
				place(x.viewSrc)
			}
			nodes = append(nodes, int(x.exec))
		}
		for _, s := range ro.Trace.Steps {
			if i, ok := nodeOf[s.Name]; ok && s.Kind == trace.KindOp {
				place(i)
			}
		}
		for k := range n {
			place(tensorOf[k])
		}
		if isIdentity(nodes) || slices.ContainsFunc(orders, func(o []int) bool { return slices.Equal(o, nodes) }) {
			continue
		}
		orders = append(orders, nodes)
		rules = append(rules, rule)
	}
	return orders, rules, nil
}
