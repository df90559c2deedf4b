package arena

import "math/bits"

// Handles. A node is addressed by a uint32 handle into Arena.nodes. The
// first nheads slots are the list heads of the size classes that can occur
// (those up to the class of the whole arena; all of them when unbounded):
// slot c is the head of class c's circular list. Class 0 holds no size, so
// slot 0 is never in a list and doubles as none, the null handle of tail
// chains and of the retired list. Free regions and retired slots take the
// handles from nheads up; slots from fresh on have never been used.
//
// The slice length is a power of two, so that handle&(len-1) is an index
// the compiler can see is in bounds and, for every valid handle, the
// handle itself: the hot paths index with nodes[int(h)&m], m = len-1,
// instead of a checked nodes[h].
const none = 0

// node is one maximal free region [lo, hi), in granules, a class head, or
// a retired slot. A live node sits in exactly one class list (prev, next)
// and in the chain of the bucket holding its last granule hi-1 (chain). A
// retired slot sits in the retired list through next, with class 0. A
// class head c has class c, lo = hi = headLo, and prev, next linking the
// list's first and last nodes (itself when the list is empty).
type node struct {
	lo, hi     int64
	prev, next uint32 // class list neighbours, or the next retired slot
	chain      uint32 // next node whose last granule lies in the same bucket
	class      uint32 // classOf(hi-lo) while live; 0 while retired
}

// headLo is the lo of a class head: above every region, so that FitLean's
// "does the first region lie lower" is false for an empty list.
const headLo = 1<<63 - 1

// The operations below keep four structures in step: the node slots, the
// class lists with their bitmap, the tail bitmap and the tail chains.
// Alloc and Free have their common cases written out in full; these
// helpers serve the rarer paths (AllocAt, growth, a join of two regions).

// unlinkNode takes n out of its class list.
func (a *Arena) unlinkNode(n *node) {
	nodes := a.nodes
	prev, next := n.prev, n.next
	nodes[prev].next = next
	nodes[next].prev = prev
	if prev == next {
		a.classes.remove(int(n.class))
	}
}

// linkNode puts n (handle h) into the list of class c. FitFast pushes it
// at the front. FitLean puts it second when the front region lies lower,
// so the first region of a list tends to be the lowest-addressed one and
// low addresses are reused first.
func (a *Arena) linkNode(h uint32, n *node, c int) {
	nodes := a.nodes
	n.class = uint32(c)
	p := uint32(c)
	first := nodes[p].next
	if first == p {
		a.classes.add(c)
	} else if a.sorted && nodes[first].lo < n.lo {
		p = first
	}
	q := nodes[p].next
	n.prev, n.next = p, q
	nodes[p].next = h
	nodes[q].prev = h
}

// relink moves node h from its class list to that of class c.
func (a *Arena) relink(h uint32, c int) {
	n := &a.nodes[h]
	a.unlinkNode(n)
	a.linkNode(h, n, c)
}

// tailSet chains node h, whose end is already set, under the bucket of its
// last granule g, in end order.
func (a *Arena) tailSet(h uint32, g int64) {
	w := g >> bucketShift
	nodes := a.nodes
	p := &a.chains[w]
	if *p == none {
		// Mark the bucket; the summaries above change only when its
		// level-0 word was empty.
		s0 := a.tails.level[0]
		old := s0[w>>6]
		s0[w>>6] = old | 1<<(uint64(w)&63)
		if old == 0 {
			a.tails.setAbove(w >> 6)
		}
	}
	// Chains are ordered by end: the node goes before the first that ends
	// after it.
	hi := nodes[h].hi
	for *p != none && nodes[*p].hi < hi {
		p = &nodes[*p].chain
	}
	nodes[h].chain = *p
	*p = h
}

// tailClear unchains node h from the bucket of its last granule g.
func (a *Arena) tailClear(h uint32, g int64) {
	w := g >> bucketShift
	nodes := a.nodes
	next := nodes[h].chain
	p := &a.chains[w]
	if *p == h {
		*p = next
		if next == none {
			s0 := a.tails.level[0]
			v := s0[w>>6] &^ (1 << (uint64(w) & 63))
			s0[w>>6] = v
			if v == 0 {
				a.tails.clearAbove(w >> 6)
			}
		}
		return
	}
	for p = &nodes[*p].chain; *p != h; p = &nodes[*p].chain {
	}
	*p = next
}

// tailNode returns the node whose region ends at granule end, or none.
func (a *Arena) tailNode(end int64) uint32 {
	nodes := a.nodes
	h := a.chains[(end-1)>>bucketShift]
	for h != none && nodes[h].hi != end {
		h = nodes[h].chain
	}
	return h
}

// after returns the free region with the lowest end above g: the first
// free region in address order that ends after granule g (its last granule
// is g or later), or none.
func (a *Arena) after(g int64) uint32 {
	nodes := a.nodes
	w := g >> bucketShift
	for h := a.chains[w]; h != none; h = nodes[h].chain {
		if nodes[h].hi > g {
			return h
		}
	}
	if w = a.tails.next(w + 1); w < 0 {
		return none
	}
	return a.chains[w]
}

// moveTail re-chains node h, whose last granule moved from old to g.
func (a *Arena) moveTail(h uint32, old, g int64) {
	if old>>bucketShift != g>>bucketShift {
		a.tailClear(h, old)
		a.tailSet(h, g)
	}
}

// insert adds the free region [lo, hi), which touches no other free region.
// It takes the first retired slot and leaves the retired list non-empty,
// as Free expects.
func (a *Arena) insert(lo, hi int64) {
	h := a.retired
	n := &a.nodes[h]
	a.retired = n.next
	a.nfree++
	n.lo, n.hi = lo, hi
	a.linkNode(h, n, classOf(hi-lo))
	a.tailSet(h, hi-1)
	if a.retired == none {
		a.newSlot()
	}
}

// newSlot retires the first never-used slot, doubling the node slice when
// there is none: the retired list, which was empty, holds one slot after.
func (a *Arena) newSlot() {
	if int(a.fresh) == len(a.nodes) {
		nodes := make([]node, 2*len(a.nodes))
		copy(nodes, a.nodes)
		a.nodes = nodes
	}
	a.nodes[a.fresh] = node{}
	a.retired = a.fresh
	a.fresh++
}

// remove deletes free region h entirely: out of its list and chain, slot
// retired.
func (a *Arena) remove(h uint32) {
	n := &a.nodes[h]
	a.unlinkNode(n)
	a.tailClear(h, n.hi-1)
	n.class = 0
	n.next = a.retired
	a.retired = h
	a.nfree--
}

// resizeChains sizes chains to one head per bucket the tail bitmap holds.
// With keep, existing heads stay and only new ones start empty; otherwise
// all do.
func (a *Arena) resizeChains(keep bool) {
	n := int(a.tails.size())
	old := 0
	if keep {
		old = len(a.chains)
	}
	if cap(a.chains) < n {
		c := make([]uint32, n)
		copy(c, a.chains[:old])
		a.chains = c
	} else {
		a.chains = a.chains[:n]
		clear(a.chains[old:])
	}
}

// init empties the arena to one free region [0, initCap).
func (a *Arena) init() {
	a.capG = a.initCap
	a.capB = a.capG << a.shift
	a.inUseG, a.peakG, a.highG, a.nfree = 0, 0, 0, 0
	if a.unbounded {
		a.nheads = numClasses
	} else {
		a.nheads = uint32(classOf(a.capG)) + 1
	}
	if n := 2 * int(a.nheads); len(a.nodes) < n {
		a.nodes = make([]node, 1<<bits.Len(uint(n-1)))
	}
	for c := range a.nheads {
		a.nodes[c] = node{lo: headLo, hi: headLo, prev: c, next: c, class: c}
	}
	a.fresh = a.nheads
	a.newSlot()
	a.classes = classSet{}
	a.tails.reset((a.capG + 1<<bucketShift - 1) >> bucketShift)
	a.resizeChains(false)
	if a.capG > 0 {
		a.insert(0, a.capG)
	}
}
