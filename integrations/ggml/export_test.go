package ggml

import "unsafe"

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
