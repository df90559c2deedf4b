//go:build !arenachecked

package arena

import "unsafe"

// nodeBase is what the hot paths index nodes from: the address of the node
// slice's first slot. With the arenachecked build tag it is the slice
// itself, and every access is bounds-checked (see handle_checked.go).
type nodeBase = unsafe.Pointer

// baseOf returns the base of a node slice of at least one slot.
func baseOf(nodes []node) nodeBase { return unsafe.Pointer(unsafe.SliceData(nodes)) }

// at returns the node of handle h. A handle is its slot's byte offset in
// units of 8 bytes, so the address is one scaled-index addressing mode:
// no shift, no copy of the handle, no bounds check. Handles come only from
// the arena itself, never from a caller; CheckInvariants proves every
// stored one a used slot's, and the arenachecked build tag turns this into
// a checked slice access for the tests and fuzzers to run under.
func at(base nodeBase, h uint32) *node {
	return (*node)(unsafe.Add(base, uintptr(h)<<3))
}

// A node must be 8<<handleShift bytes for a handle to be its offset in
// units of 8: these fail to compile otherwise.
var (
	_ [unsafe.Sizeof(node{}) - 8<<handleShift]struct{}
	_ [8<<handleShift - unsafe.Sizeof(node{})]struct{}
)
