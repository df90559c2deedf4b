package liveness

// coverage counts, for every byte offset, how many (user, run) pairs cover
// it, and keeps the number of bytes whose count is non-zero, so that the
// union of pending bytes is known at every moment without a walk.
//
// It is the segment tree of the "length of a union of intervals" problem,
// built on demand over [0, span), span a power of two that grows (by adding
// roots above the old one) when a run ends beyond it:
//
//	span 16:          [0,16)
//	                 /      \
//	            [0,8)        [8,16)
//	           /    \
//	       [0,4)    [4,8)          add [2,7): [2,4) and [4,7) split further;
//	                               each fully covered node counts the run once.
//
// A node's cnt is the number of runs that cover its whole range and stop
// there; covered is the number of bytes of its range under some run: its
// whole length when cnt > 0, else the sum of its children's. Removing a run
// walks exactly the nodes adding it did, so counts never go below zero
// (checked: a removal that would take one below zero is undone). Nodes
// live in one slice addressed by int32 and are never freed one by one;
// when nothing is covered the slice is emptied for reuse, so a program
// whose pending users drain now and then keeps it small. Cost of an
// add or remove: O(log span) nodes, no allocation once the slice has grown.
type coverage struct {
	nodes []covNode // nodes[0] is a sentinel: child index 0 means none
	root  int32     // index into nodes; meaningful when len(nodes) > 0
	span  int64     // power of two; the root covers [0, span)
	under bool      // the update in progress took a count below zero
}

// covNode is one segment [lo, lo+len) of the tree; its bounds are implied
// by the path from the root. Children are indexes into coverage.nodes, 0
// meaning none (node 0 is a sentinel, never a child).
type covNode struct {
	cnt         int32
	left, right int32
	covered     int64
}

// Covered returns the number of bytes under at least one run.
func (c *coverage) Covered() int64 {
	if len(c.nodes) == 0 {
		return 0
	}
	return c.nodes[c.root].covered
}

// add adds delta (+1 or -1) to every byte of [lo, hi). It reports false,
// changing nothing visible, when a removal finds no matching addition (a
// count would go below zero), which means the caller's bookkeeping broke.
func (c *coverage) add(lo, hi int64, delta int32) bool {
	if hi <= lo {
		return true
	}
	if len(c.nodes) == 0 {
		if delta < 0 {
			return false
		}
		c.span = 1
		c.nodes = append(c.nodes[:0], covNode{}, covNode{})
		c.root = 1
	}
	for c.span < hi {
		if delta < 0 {
			return false // nothing was ever added beyond span
		}
		old := c.root
		c.nodes = append(c.nodes, covNode{left: old, covered: c.nodes[old].covered})
		c.root = int32(len(c.nodes) - 1)
		c.span *= 2
	}
	c.under = false
	c.update(c.root, 0, c.span, lo, hi, delta)
	if c.under {
		// A count went below zero: put every count back as it was.
		c.update(c.root, 0, c.span, lo, hi, -delta)
		c.under = false
		return false
	}
	if c.nodes[c.root].covered == 0 {
		c.reset()
	}
	return true
}

// size returns the number of nodes in use (for compaction decisions).
func (c *coverage) size() int { return len(c.nodes) }

// reset empties the tree, keeping its memory.
func (c *coverage) reset() { c.nodes, c.span = c.nodes[:0], 0 }

// update applies delta to [lo, hi) within node n covering [nlo, nlo+size).
func (c *coverage) update(n int32, nlo, size, lo, hi int64, delta int32) {
	if lo <= nlo && nlo+size <= hi {
		c.nodes[n].cnt += delta
		if c.nodes[n].cnt < 0 {
			c.under = true
		}
		c.settle(n, size)
		return
	}
	half := size / 2
	if lo < nlo+half {
		if c.nodes[n].left == 0 {
			c.nodes = append(c.nodes, covNode{})
			c.nodes[n].left = int32(len(c.nodes) - 1)
		}
		c.update(c.nodes[n].left, nlo, half, lo, hi, delta)
	}
	if hi > nlo+half {
		if c.nodes[n].right == 0 {
			c.nodes = append(c.nodes, covNode{})
			c.nodes[n].right = int32(len(c.nodes) - 1)
		}
		c.update(c.nodes[n].right, nlo+half, half, lo, hi, delta)
	}
	c.settle(n, size)
}

// settle recomputes node n's covered bytes from its count and children.
func (c *coverage) settle(n int32, size int64) {
	nd := &c.nodes[n]
	switch {
	case nd.cnt > 0:
		nd.covered = size
	default:
		var sum int64
		if nd.left != 0 {
			sum += c.nodes[nd.left].covered
		}
		if nd.right != 0 {
			sum += c.nodes[nd.right].covered
		}
		nd.covered = sum
	}
}
