package arena

// none is the null handle of node lists and chains.
const none = -1

// node is one maximal free region [lo, hi) in granules. Live nodes sit in
// exactly one class list (prev, next) and one tail chain (chain); retired
// nodes sit in the slot free list through next, with class == none.
type node struct {
	lo, hi     int64
	prev, next int32 // class list neighbours, or the next retired slot
	chain      int32 // next node whose last granule lies in the same 64-granule word
	class      int32 // classOf(hi-lo) while live; none while retired
}

// Arena manages the free space of the region [0, Capacity()): which
// granule-aligned ranges are free to allocate. It does not know what the
// allocated bytes hold or who uses them. An Arena is not safe for concurrent
// use; callers serialize access.
type Arena struct {
	shift     uint  // log2(granule)
	fit       Fit   // resolved: FitFast or FitLean
	unbounded bool  // grow at the top instead of failing
	initCap   int64 // capacity in granules given to New; Reset returns to it
	backing   []byte

	capG   int64 // capacity in granules
	inUseG int64 // allocated granules; free granules = capG - inUseG
	peakG  int64 // max inUseG since init
	highG  int64 // max allocated end since init, in granules
	nfree  int   // live nodes: free regions

	nodes   []node // node slots, addressed by int32 handles
	retired int32  // head of the retired-slot list, or none
	heads   [numClasses]int32
	classes classSet
	tails   tailBits // bit g: a free region ends at granule g+1
	chains  []int32  // per tails level-0 word: head of the chain of nodes ending in it
}

// init empties the arena to one free region [0, initCap).
func (a *Arena) init() {
	a.capG = a.initCap
	a.inUseG, a.peakG, a.highG, a.nfree = 0, 0, 0, 0
	a.nodes = a.nodes[:0]
	a.retired = none
	for i := range a.heads {
		a.heads[i] = none
	}
	a.classes = classSet{}
	a.tails.reset(a.capG)
	a.resizeChains(false)
	if a.capG > 0 {
		a.insert(0, a.capG)
	}
}

// resizeChains sizes chains to one head per tails word. With keep, the
// existing heads stay and only new ones start empty; otherwise all do.
func (a *Arena) resizeChains(keep bool) {
	n := len(a.tails.level[0])
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

// newNode returns a slot for a free region [lo, hi), reusing a retired one.
func (a *Arena) newNode(lo, hi int64) int32 {
	h := a.retired
	if h == none {
		h = int32(len(a.nodes))
		a.nodes = append(a.nodes, node{})
	} else {
		a.retired = a.nodes[h].next
	}
	a.nodes[h] = node{lo: lo, hi: hi, prev: none, next: none, chain: none, class: none}
	a.nfree++
	return h
}

// retire returns slot h, already out of its class list and chain.
func (a *Arena) retire(h int32) {
	n := &a.nodes[h]
	n.class = none
	n.next = a.retired
	a.retired = h
	a.nfree--
}

// link puts node h into the list of class c.
func (a *Arena) link(h int32, c int) {
	n := &a.nodes[h]
	n.class = int32(c)
	n.prev = none
	first := a.heads[c]
	n.next = first
	if first != none {
		a.nodes[first].prev = h
	} else {
		a.classes.add(c)
	}
	a.heads[c] = h
}

// unlink takes node h out of its class list.
func (a *Arena) unlink(h int32) {
	n := &a.nodes[h]
	c := int(n.class)
	if n.prev != none {
		a.nodes[n.prev].next = n.next
	} else {
		a.heads[c] = n.next
		if n.next == none {
			a.classes.remove(c)
		}
	}
	if n.next != none {
		a.nodes[n.next].prev = n.prev
	}
}

// reclass moves node h to the class of its current size, if that changed.
func (a *Arena) reclass(h int32) {
	n := &a.nodes[h]
	if c := classOf(n.hi - n.lo); int32(c) != n.class {
		a.unlink(h)
		a.link(h, c)
	}
}

// chainAdd records that node h ends at granule g+1 (g = hi-1).
func (a *Arena) chainAdd(h int32, g int64) {
	a.tails.set(g)
	w := g >> 6
	a.nodes[h].chain = a.chains[w]
	a.chains[w] = h
}

// chainRemove forgets that node h ends at granule g+1.
func (a *Arena) chainRemove(h int32, g int64) {
	a.tails.clear(g)
	w := g >> 6
	p := a.chains[w]
	if p == h {
		a.chains[w] = a.nodes[h].chain
		return
	}
	for {
		q := a.nodes[p].chain
		if q == h {
			a.nodes[p].chain = a.nodes[h].chain
			return
		}
		p = q
	}
}

// tailNode returns the node whose last granule is g; the tails bit of g
// must be set. The chain holds at most 64 nodes and almost always one.
func (a *Arena) tailNode(g int64) int32 {
	h := a.chains[g>>6]
	for a.nodes[h].hi-1 != g {
		h = a.nodes[h].chain
	}
	return h
}

// insert adds the free region [lo, hi), which touches no other free region.
func (a *Arena) insert(lo, hi int64) int32 {
	h := a.newNode(lo, hi)
	a.link(h, classOf(hi-lo))
	a.chainAdd(h, hi-1)
	return h
}

// pick returns a free region of at least n granules, or none when no free
// region is that large.
func (a *Arena) pick(n int64) int32 {
	c := classOf(n)
	if c < 1<<classBits || classLow(c) == n {
		// Every region of class c holds n: the first non-empty class at or
		// above c serves both fits.
		if c = a.classes.first(c); c < 0 {
			return none
		}
		return a.heads[c]
	}
	if a.fit == FitLean {
		// Best fit within the class first: a walk of at most leanScan
		// regions, stopping at an exact fit.
		if h := a.bestInClass(c, n, leanScan); h != none {
			return h
		}
	}
	if up := a.classes.first(c + 1); up >= 0 {
		return a.heads[up]
	}
	// Nothing above the class: only a region of class c itself can hold n.
	// This walk runs when the arena is about to fail or grow, so its
	// length is never paid on the way to a successful allocation that
	// could have been served otherwise.
	return a.bestInClass(c, n, -1)
}

// bestInClass returns the smallest region of class c holding n granules,
// looking at no more than limit regions (all when limit < 0), or none.
func (a *Arena) bestInClass(c int, n int64, limit int) int32 {
	best, bestSize := int32(none), int64(0)
	for h := a.heads[c]; h != none && limit != 0; h = a.nodes[h].next {
		s := a.nodes[h].hi - a.nodes[h].lo
		if s >= n && (best == none || s < bestSize) {
			best, bestSize = h, s
			if s == n {
				break
			}
		}
		limit--
	}
	return best
}

// leanScan bounds the best-fit walk of FitLean, keeping Alloc O(1).
const leanScan = 16

// alloc carves n granules from the low end of a free region and returns
// their first granule, or false when no free region is large enough.
func (a *Arena) alloc(n int64) (int64, bool) {
	h := a.pick(n)
	if h == none {
		return 0, false
	}
	nd := &a.nodes[h]
	lo := nd.lo
	if nd.hi-lo == n {
		a.unlink(h)
		a.chainRemove(h, nd.hi-1)
		a.retire(h)
	} else {
		nd.lo = lo + n
		a.reclass(h)
	}
	return lo, true
}

// grow places n granules at the top of an unbounded arena, absorbing a free
// region that ends at the top, and extends the capacity to their end.
// It fails, changing nothing, when the arena would exceed maxGranules.
func (a *Arena) grow(n int64) (int64, bool) {
	lo, top := a.capG, int32(none)
	if a.capG > 0 && a.tails.has(a.capG-1) {
		top = a.tailNode(a.capG - 1)
		lo = a.nodes[top].lo
	}
	if n > maxGranules-lo {
		return 0, false
	}
	if top != none {
		a.unlink(top)
		a.chainRemove(top, a.capG-1)
		a.retire(top)
	}
	a.capG = lo + n
	if a.capG > a.tails.size() {
		a.tails.grow(a.capG)
		a.resizeChains(true)
	}
	return lo, true
}

// allocated reports whether no free region meets [lo, hi).
func (a *Arena) allocated(lo, hi int64) bool {
	t := a.tails.next(lo)
	return t < 0 || a.nodes[a.tailNode(t)].lo >= hi
}

// free returns the allocated range [lo, hi) to the free space, merging it
// with the free regions that end at lo and start at hi. It reports false,
// changing nothing, when any granule of the range is already free.
func (a *Arena) free(lo, hi int64) bool {
	// The first free region ending after lo either starts at or after hi
	// (no overlap) or meets the range.
	right := int32(none)
	if t := a.tails.next(lo); t >= 0 {
		right = a.tailNode(t)
		switch rlo := a.nodes[right].lo; {
		case rlo < hi:
			return false
		case rlo > hi:
			right = none
		}
	}
	left := int32(none)
	if lo > 0 && a.tails.has(lo-1) {
		left = a.tailNode(lo - 1)
	}
	switch {
	case left == none && right == none:
		a.insert(lo, hi)
	case left == none:
		a.nodes[right].lo = lo
		a.reclass(right)
	case right == none:
		a.chainRemove(left, lo-1)
		a.nodes[left].hi = hi
		a.chainAdd(left, hi-1)
		a.reclass(left)
	default:
		a.unlink(left)
		a.chainRemove(left, lo-1)
		a.nodes[right].lo = a.nodes[left].lo
		a.retire(left)
		a.reclass(right)
	}
	return true
}

// freeRegions returns the number of free regions.
func (a *Arena) freeRegions() int { return a.nfree }

// largestFreeG returns the size of the largest free region in granules: the
// largest in the highest non-empty class.
func (a *Arena) largestFreeG() int64 {
	c := a.classes.last()
	if c < 0 {
		return 0
	}
	var m int64
	for h := a.heads[c]; h != none; h = a.nodes[h].next {
		m = max(m, a.nodes[h].hi-a.nodes[h].lo)
	}
	return m
}

// eachFree calls f for every free region in address order.
func (a *Arena) eachFree(f func(lo, hi int64)) {
	for g := int64(0); g < a.capG; {
		t := a.tails.next(g)
		if t < 0 {
			return
		}
		n := &a.nodes[a.tailNode(t)]
		f(n.lo, n.hi)
		g = t + 1
	}
}
