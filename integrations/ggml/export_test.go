package ggml

import (
	"unsafe"

	"github.com/subarena/subarena/trace"
)

// NodeOrders returns the node orders ReorderGraph tries for graph (CPU
// buffer type), whatever their plans.
func NodeOrders(graph unsafe.Pointer) ([][]int, error) {
	t, err := ReadGraph(graph, ReadOptions{})
	if err != nil {
		return nil, err
	}
	orders, _, err := nodeOrders(graph, cpuBufferType(), t)
	return orders, err
}

// OrderCache returns the entries of a's cache of node orders
// (Options.Reorder), one per graph structure whose order was decided: an
// entry is replaced only when its structure's order is decided again.
func OrderCache(a *Allocator) []any {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]any, 0, len(a.orders))
	for _, o := range a.orders {
		out = append(out, o)
	}
	return out
}

// GraphNodes returns graph's nodes in execution order.
func GraphNodes(graph unsafe.Pointer) []unsafe.Pointer { return graphNodes(graph) }

// Placed reads graph, just placed by a (AllocGraph), as a trace and the
// plan of offsets its own tensors were placed at, for check.Plan. Relaid
// tensors are not supported (use Options.NoRelayout).
func Placed(a *Allocator, graph unsafe.Pointer) (*trace.Trace, *trace.Plan, error) {
	return a.placed(graph)
}

// HitLast places graph with sa_hit_last on a's HitState, as a C host
// would: 1 on a hit.
func HitLast(a *Allocator, graph unsafe.Pointer) int { return a.hitLast(graph) }

// CheckScan checks what a's hit path trusts of its last scan and placement
// (sa_check_scan).
func CheckScan(a *Allocator) error { return a.checkScan() }

// CheckFirstPlan makes graph's first plan, lets mutate change the offsets
// it gives (one per scan record, -1 for the records it does not place) and
// checks the result as the first plan is checked (Options.Check). It also
// reports whether markPartial finds a slot the plan shares while part of
// its tensor is live.
func CheckFirstPlan(a *Allocator, graph unsafe.Pointer, mutate func(offsets []int64)) (partial bool, err error) {
	return a.checkFirstMutated(graph, mutate)
}
