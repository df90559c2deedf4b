package arena

import "math/bits"

// leanScan bounds FitLean's first-fit walk of the request's own class.
const leanScan = 8

// Alloc returns a free block of at least size bytes (size rounded up to the
// granule), now allocated. It fails with ErrInvalidSize for size <= 0 or a
// size beyond any possible arena, and with a *NoSpaceError (ErrNoSpace)
// when a bounded arena has no free region large enough. An unbounded arena
// grows at the top instead of failing.
//
// FitLean takes the first region that fits among leanScan of the request's
// own class (address order, roughly); failing that, the lower-addressed of
// the first regions of the two smallest classes whose every region fits.
// FitFast takes the first region of the smallest such class. Both carve
// the block from the low end of the region.
func (a *Arena) Alloc(size int64) (Block, error) {
	// size-1 < maxSize rejects size <= 0 and size > maxSize at once.
	if uint64(size-1) >= uint64(a.maxSize) {
		return Block{}, a.invalidSize(size)
	}
	sh := a.shift & 63
	n := (size + a.gmask) >> sh
	s := classShift(n)
	c := int(s<<classBits) + int(n>>s) // classOf(n)
	nodes := a.nodes
	h := int32(none)
	if a.sorted {
		if n&(1<<s-1) != 0 {
			// Class c holds regions smaller than n too: walk its head.
			k := leanScan
			for x := a.heads[c&(classSlots-1)]; x != none; {
				nd := &nodes[x]
				if nd.hi-nd.lo >= n {
					h = x
					break
				}
				if k--; k == 0 {
					break
				}
				x = nd.next
			}
			c++
		}
		if h == none {
			if up := a.classes.first(c); up >= 0 {
				h = a.heads[up&(classSlots-1)]
				// The next non-empty class, looked for only in the same
				// word of the class bitmap (two octaves).
				up++
				if m := a.classes.word[uint(up)>>6&(classWordSlots-1)] & (^uint64(0) << (uint(up) & 63)); m != 0 {
					up = up&^63 | bits.TrailingZeros64(m)
					if h2 := a.heads[up&(classSlots-1)]; nodes[h2].lo < nodes[h].lo {
						h = h2
					}
				}
			}
		}
	} else {
		if n&(1<<s-1) != 0 {
			c++
		}
		if up := a.classes.first(c); up >= 0 {
			h = a.heads[up&(classSlots-1)]
		}
	}
	if h == none {
		// Only a region of n's own class, beyond the walk, can still fit.
		if h = a.fitInClass(n); h == none {
			return a.allocSlow(size, n)
		}
	}

	nd := &nodes[h]
	lo := nd.lo
	if rest := nd.hi - lo - n; rest == 0 {
		// Exact fit: the region goes, out of its list and its chain, and
		// its slot is retired.
		prev, next := nd.prev, nd.next
		if prev != none {
			nodes[prev].next = next
		} else {
			oc := int(nd.class)
			a.heads[oc&(classSlots-1)] = next
			if next == none {
				a.classes.remove(oc)
			}
		}
		if next != none {
			nodes[next].prev = prev
		}
		chains := a.chains
		w := (nd.hi - 1) >> bucketShift
		if p := chains[w]; p == h {
			next := nd.chain
			chains[w] = next
			if next == none {
				s0 := a.tails.level[0]
				v := s0[w>>6] &^ (1 << (uint64(w) & 63))
				s0[w>>6] = v
				if v == 0 {
					a.tails.clearAbove(w >> 6)
				}
			}
		} else {
			a.unchainAfter(p, h)
		}
		nd.class = none
		nd.next = a.retired
		a.retired = h
		a.nfree--
	} else {
		// The region keeps its tail; only its size class may change. In an
		// address-ordered list raising lo keeps the order.
		nd.lo = lo + n
		rs := classShift(rest)
		if c := int(rs<<classBits) + int(rest>>rs); c != int(nd.class) {
			prev, next := nd.prev, nd.next
			if prev != none {
				nodes[prev].next = next
			} else {
				oc := int(nd.class)
				a.heads[oc&(classSlots-1)] = next
				if next == none {
					a.classes.remove(oc)
				}
			}
			if next != none {
				nodes[next].prev = prev
			}
			nd.class = int32(c)
			hp := &a.heads[c&(classSlots-1)]
			switch first := *hp; {
			case first == none:
				nd.prev, nd.next = none, none
				*hp = h
				a.classes.add(c)
			case a.sorted && nodes[first].lo < nd.lo:
				f := &nodes[first]
				second := f.next
				nd.prev, nd.next = first, second
				f.next = h
				if second != none {
					nodes[second].prev = h
				}
			default:
				nd.prev, nd.next = none, first
				nodes[first].prev = h
				*hp = h
			}
		}
	}
	u := a.inUseG + n
	a.inUseG = u
	if u > a.peakG {
		a.peakG = u
	}
	if lo+n > a.highG {
		a.highG = lo + n
	}
	return Block{Offset: lo << sh, Size: n << sh}, nil
}

// fitInClass walks the whole class of n for a region that fits: the last
// resort before failing or growing, when no larger class has a region.
func (a *Arena) fitInClass(n int64) int32 {
	for h := a.heads[classOf(n)]; h != none; h = a.nodes[h].next {
		if a.nodes[h].hi-a.nodes[h].lo >= n {
			return h
		}
	}
	return none
}

// allocSlow serves a request no free region can hold: an unbounded arena
// grows, a bounded one fails with the figures.
func (a *Arena) allocSlow(size, n int64) (Block, error) {
	if !a.unbounded {
		return Block{}, a.noSpace(size, n)
	}
	// Place at the start of the free region that ends at the top, if any,
	// else at the top; the capacity becomes the block's end.
	lo, top := a.capG, int32(none)
	if a.capG > 0 {
		if top = a.tailNode(a.capG); top != none {
			lo = a.nodes[top].lo
		}
	}
	if n > maxGranules-lo {
		return Block{}, a.tooLarge(size)
	}
	if top != none {
		a.remove(top)
	}
	a.capG = lo + n
	a.capB = a.capG << a.shift
	if buckets := (a.capG + 1<<bucketShift - 1) >> bucketShift; buckets > a.tails.size() {
		a.tails.grow(buckets)
		a.resizeChains(true)
	}
	a.inUseG += n
	a.peakG = max(a.peakG, a.inUseG)
	a.highG = max(a.highG, a.capG)
	return Block{Offset: lo << a.shift, Size: n << a.shift}, nil
}
