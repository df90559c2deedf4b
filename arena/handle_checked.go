//go:build arenachecked

package arena

import "strconv"

// nodeBase is the node slice itself under the arenachecked build tag, so
// that every node access of the hot paths is bounds-checked and a handle
// that is no slot's panics at once.
type nodeBase = []node

// baseOf returns the node slice.
func baseOf(nodes []node) nodeBase { return nodes }

// at returns the node of handle h, checked.
func at(base nodeBase, h uint32) *node {
	if h&(1<<handleShift-1) != 0 {
		panic("arena: handle " + strconv.FormatUint(uint64(h), 10) + " is no slot's")
	}
	return &base[h>>handleShift]
}
