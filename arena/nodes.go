package arena

// Handles. A node is addressed by a uint32 handle: its slot's index in
// Arena.nodes times 4, which is the slot's byte offset in units of 8 bytes
// (a node is 32 bytes), so that the hot paths reach a node with one
// scaled-index addressing mode (see at). The first nheads slots are the
// list heads of the size classes that can occur (those up to the class of
// the whole arena; all of them when unbounded): slot c is the head of
// class c's circular list. Class 0 holds no size, so slot 0 is never in a
// list and its handle 0 doubles as none, the null handle of tail chains and
// of the retired list. Free regions and retired slots take the slots from
// nheads up; slots from fresh on have never been used. Handles reach 2^30
// slots, 32 GiB of nodes.
const none = 0

// handleShift converts between slots and handles: h = slot << handleShift.
const handleShift = 2

// maxSlots bounds the node slice so that every handle fits a uint32.
const maxSlots = 1 << (32 - handleShift)

// headOf returns the handle of class c's list head.
func headOf(c int) uint32 { return uint32(c) << handleShift }

// node returns the node of handle h, bounds-checked: for the paths off
// Alloc's and Free's common cases.
func (a *Arena) node(h uint32) *node { return &a.nodes[h>>handleShift] }

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
// Alloc and Free have their common cases written out in full, with
// unchecked node access (at); these helpers serve the rarer paths (AllocAt,
// a request only its own class can serve, growth, Reset) with checked
// access (node).

// unlinkNode takes n out of its class list.
func (a *Arena) unlinkNode(n *node) {
	prev, next := n.prev, n.next
	a.node(prev).next = next
	a.node(next).prev = prev
	if prev == next {
		a.classes.remove(int(n.class))
	}
}

// linkNode puts n (handle h) into the list of class c. FitFast pushes it
// at the front. FitLean puts it second when the front region lies lower,
// so the first region of a list tends to be the lowest-addressed one and
// low addresses are reused first.
func (a *Arena) linkNode(h uint32, n *node, c int) {
	n.class = uint32(c)
	p := headOf(c)
	first := a.node(p).next
	if first == p {
		a.classes.add(c)
	} else if a.sorted && a.node(first).lo < n.lo {
		p = first
	}
	q := a.node(p).next
	n.prev, n.next = p, q
	a.node(p).next = h
	a.node(q).prev = h
}

// relink moves node h from its class list to that of class c.
func (a *Arena) relink(h uint32, c int) {
	n := a.node(h)
	a.unlinkNode(n)
	a.linkNode(h, n, c)
}

// tailSet chains node h, whose end is already set, under the bucket of its
// last granule g, in end order.
func (a *Arena) tailSet(h uint32, g int64) {
	w := g >> bucketShift
	p := &a.chains[w]
	if *p == none {
		a.tails.set(w)
	}
	// Chains are ordered by end: the node goes before the first that ends
	// after it.
	n := a.node(h)
	for *p != none && a.node(*p).hi < n.hi {
		p = &a.node(*p).chain
	}
	n.chain = *p
	*p = h
}

// tailClear unchains node h from the bucket of its last granule g.
func (a *Arena) tailClear(h uint32, g int64) {
	w := g >> bucketShift
	next := a.node(h).chain
	p := &a.chains[w]
	if *p == h {
		*p = next
		if next == none {
			a.tails.clear(w)
		}
		return
	}
	for p = &a.node(*p).chain; *p != h; p = &a.node(*p).chain {
	}
	*p = next
}

// tailNode returns the node whose region ends at granule end, or none.
func (a *Arena) tailNode(end int64) uint32 {
	h := a.chains[(end-1)>>bucketShift]
	for h != none && a.node(h).hi != end {
		h = a.node(h).chain
	}
	return h
}

// after returns the free region with the lowest end above g: the first
// free region in address order that ends after granule g (its last granule
// is g or later), or none.
func (a *Arena) after(g int64) uint32 {
	w := g >> bucketShift
	for h := a.chains[w]; h != none; h = a.node(h).chain {
		if a.node(h).hi > g {
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
	n := a.node(h)
	a.retired = n.next
	a.nfree++
	n.lo, n.hi = lo, hi
	a.linkNode(h, n, classOf(hi-lo))
	a.grown(hi - lo)
	a.tailSet(h, hi-1)
	if a.retired == none {
		a.newSlot()
	}
}

// newSlot retires the first never-used slot, doubling the node slice when
// there is none: the retired list, which was empty, holds one slot after.
func (a *Arena) newSlot() {
	if int(a.fresh) == len(a.nodes) {
		if len(a.nodes) >= maxSlots {
			// 2^30 free regions at once: 32 GiB of nodes.
			panic(errTooManyRegions)
		}
		nodes := make([]node, 2*len(a.nodes))
		copy(nodes, a.nodes)
		a.nodes = nodes
	}
	a.nodes[a.fresh] = node{}
	a.retired = a.fresh << handleShift
	a.fresh++
}

// remove deletes free region h entirely: out of its list and chain, slot
// retired.
func (a *Arena) remove(h uint32) {
	n := a.node(h)
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
	a.maxG, a.maxN = 0, 0
	if a.unbounded {
		a.nheads = numClasses
	} else {
		a.nheads = uint32(classOf(a.capG)) + 1
	}
	if n := 2 * int(a.nheads); len(a.nodes) < n {
		a.nodes = make([]node, n)
	}
	for c := range a.nheads {
		h := headOf(int(c))
		a.nodes[c] = node{lo: headLo, hi: headLo, prev: h, next: h, class: c}
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
