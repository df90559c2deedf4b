package arena

// none is the null handle of node lists and chains.
const none = -1

// node is one maximal free region [lo, hi), in granules. A live node sits in
// exactly one class list (prev, next) and in the chain of the bucket holding
// its last granule hi-1 (chain). A retired slot sits in the retired list
// through next, with class == none.
type node struct {
	lo, hi     int64
	prev, next int32 // class list neighbours, or the next retired slot
	chain      int32 // next node whose last granule lies in the same bucket
	class      int32 // classOf(hi-lo) while live; none while retired
}

// The operations below keep four structures in step: the node slots, the
// class lists with their bitmap, the tail bitmap and the tail chains. They
// are written out in full rather than composed from smaller helpers: Alloc
// and Free run one or two of them per call, and a Go call costs as much as
// the list surgery inside it.

// unlinkNode takes n (handle h) out of its class list.
func (a *Arena) unlinkNode(n *node) {
	nodes := a.nodes
	prev, next := n.prev, n.next
	if prev != none {
		nodes[prev].next = next
	} else {
		c := int(n.class)
		a.heads[c&(classSlots-1)] = next
		if next == none {
			a.classes.remove(c)
		}
	}
	if next != none {
		nodes[next].prev = prev
	}
}

// linkNode puts n (handle h) into the list of class c. FitFast pushes it
// at the front. FitLean puts it second when the front region lies lower,
// so the first region of a list tends to be the lowest-addressed one and
// low addresses are reused first.
func (a *Arena) linkNode(h int32, n *node, c int) {
	nodes := a.nodes
	n.class = int32(c)
	first := a.heads[c&(classSlots-1)]
	switch {
	case first == none:
		n.prev, n.next = none, none
		a.heads[c&(classSlots-1)] = h
		a.classes.add(c)
	case a.sorted && nodes[first].lo < n.lo:
		f := &nodes[first]
		second := f.next
		n.prev, n.next = first, second
		f.next = h
		if second != none {
			nodes[second].prev = h
		}
	default:
		n.prev, n.next = none, first
		nodes[first].prev = h
		a.heads[c&(classSlots-1)] = h
	}
}

// relink moves node h from its class list to that of class c.
func (a *Arena) relink(h int32, c int) { a.relinkNode(h, &a.nodes[h], c) }

// relinkNode moves node n (handle h) from its class list to that of class c.
func (a *Arena) relinkNode(h int32, n *node, c int) {
	nodes := a.nodes
	// Unlink.
	prev, next := n.prev, n.next
	if prev != none {
		nodes[prev].next = next
	} else {
		oc := int(n.class)
		a.heads[oc&(classSlots-1)] = next
		if next == none {
			a.classes.remove(oc)
		}
	}
	if next != none {
		nodes[next].prev = prev
	}
	// Link.
	n.class = int32(c)
	first := a.heads[c&(classSlots-1)]
	switch {
	case first == none:
		n.prev, n.next = none, none
		a.heads[c&(classSlots-1)] = h
		a.classes.add(c)
	case a.sorted && nodes[first].lo < n.lo:
		f := &nodes[first]
		second := f.next
		n.prev, n.next = first, second
		f.next = h
		if second != none {
			nodes[second].prev = h
		}
	default:
		n.prev, n.next = none, first
		nodes[first].prev = h
		a.heads[c&(classSlots-1)] = h
	}
}

// tailSet chains node h, whose end is already set, under the bucket of its
// last granule g, in end order.
func (a *Arena) tailSet(h int32, g int64) {
	w := g >> bucketShift
	first := a.chains[w]
	if first == none {
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
	nodes := a.nodes
	hi := nodes[h].hi
	p := &a.chains[w]
	for *p != none && nodes[*p].hi < hi {
		p = &nodes[*p].chain
	}
	nodes[h].chain = *p
	*p = h
}

// tailClear unchains node h from the bucket of its last granule g.
func (a *Arena) tailClear(h int32, g int64) {
	w := g >> bucketShift
	nodes := a.nodes
	next := nodes[h].chain
	p := a.chains[w]
	if p == h {
		a.chains[w] = next
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
	a.unchainAfter(p, h)
}

// unchainAfter unchains node h from a chain where it follows node p.
func (a *Arena) unchainAfter(p, h int32) {
	nodes := a.nodes
	next := nodes[h].chain
	for {
		q := nodes[p].chain
		if q == h {
			nodes[p].chain = next
			return
		}
		p = q
	}
}

// tailNode returns the node whose region ends at granule end, or none.
func (a *Arena) tailNode(end int64) int32 {
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
func (a *Arena) after(g int64) int32 {
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
func (a *Arena) moveTail(h int32, old, g int64) {
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
	if h == none {
		h = a.newSlot()
	}
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

// newSlot appends a retired slot and returns its handle: the head of the
// retired list, which was empty.
func (a *Arena) newSlot() int32 {
	h := int32(len(a.nodes))
	a.nodes = append(a.nodes, node{class: none, next: none})
	a.retired = h
	return h
}

// remove deletes free region h entirely: out of its list and chain, slot
// retired.
func (a *Arena) remove(h int32) {
	n := &a.nodes[h]
	a.unlinkNode(n)
	a.tailClear(h, n.hi-1)
	n.class = none
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
		c := make([]int32, n)
		copy(c, a.chains[:old])
		a.chains = c
	} else {
		a.chains = a.chains[:n]
	}
	for i := old; i < n; i++ {
		a.chains[i] = none
	}
}

// init empties the arena to one free region [0, initCap).
func (a *Arena) init() {
	a.capG = a.initCap
	a.capB = a.capG << a.shift
	a.inUseG, a.peakG, a.highG, a.nfree = 0, 0, 0, 0
	a.nodes = a.nodes[:0]
	a.retired = none
	for i := range a.heads {
		a.heads[i] = none
	}
	a.classes = classSet{}
	a.tails.reset((a.capG + 1<<bucketShift - 1) >> bucketShift)
	a.resizeChains(false)
	if a.capG > 0 {
		a.insert(0, a.capG)
	} else {
		a.newSlot()
	}
}
