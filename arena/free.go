package arena

import "math/bits"

// Free returns [off, off+size) to the free space, coalescing it at once with
// the free regions that end at off and start at off+size. The range may be
// any granule-aligned part of allocated space: a whole block, a piece of
// one, or a span across adjacent blocks. It fails, changing nothing, with
// ErrInvalidSize for size <= 0, ErrMisaligned for an offset or size that is
// not a granule multiple, ErrOutOfRange for a range outside [0, Capacity),
// and ErrNotAllocated when any byte of the range is already free.
func (a *Arena) Free(off, size int64) error {
	capB := a.capB
	// size-1 < capB rejects size <= 0 and size > capB; then capB-size >= 0
	// and the unsigned comparison rejects off < 0 as well.
	if uint64(size-1) >= uint64(capB) || (off|size)&a.gmask != 0 || uint64(off) > uint64(capB-size) {
		return a.badFree(off, size)
	}
	nodes := a.nodes
	m := len(nodes) - 1
	if m < 0 {
		panic(errNoHeads)
	}
	sh := a.shift & 63
	lo := off >> sh
	hi := lo + size>>sh
	chains := a.chains

	// Free makes no call until its work is done, except to fail: a Go
	// call clobbers every register, and the values it would have to save
	// cost more than the calls themselves.

	// One walk of the bucket of lo finds the left neighbour (ending at lo)
	// and the first region ending after lo, which either meets the range,
	// so it is not all allocated, or starts at hi (the right neighbour), or
	// lies beyond.
	// Chains are ordered by end, so the walk stops at the first region
	// ending after lo.
	left, right := uint32(none), uint32(none)
	w := lo >> bucketShift
	for h := chains[w]; h != none; {
		nd := &nodes[int(h)&m]
		if e := nd.hi; e > lo {
			right = h
			break
		} else if e == lo {
			left = h
		}
		h = nd.chain
	}
	if lo&(1<<bucketShift-1) == 0 && lo > 0 {
		// lo-1 lies in the bucket below.
		for h := chains[w-1]; h != none; {
			nd := &nodes[int(h)&m]
			if nd.hi == lo {
				left = h
				break
			}
			h = nd.chain
		}
	}
	if right == none {
		// The first region ending after lo ends in the next non-empty
		// bucket: usually found in the same bitmap word.
		x := w + 1
		s0 := a.tails.level[0]
		var b uint64
		if i := uint64(x) >> 6; i < uint64(len(s0)) {
			b = s0[i] >> (uint64(x) & 63)
		}
		if b != 0 {
			x += int64(bits.TrailingZeros64(b))
		} else {
			x = a.tails.next(x)
		}
		if x >= 0 {
			// The lowest end in the bucket's chain: its first.
			right = chains[x]
		}
	}
	var rn *node
	if right != none {
		rn = &nodes[int(right)&m]
		if rlo := rn.lo; rlo != hi {
			if rlo < hi {
				return a.notAllocated(lo, hi)
			}
			right, rn = none, nil
		}
	}

	a.inUseG -= hi - lo
	h := right
	var nd *node
	const moved = 1 // left: the joined node's tail changed bucket
	switch {
	case right != none:
		// Lowering lo keeps the address order of the class list: no free
		// region lies in [lo, hi). With a left neighbour too, the right
		// node takes the joined region and the left one goes, at the end.
		nd = rn
		if left != none {
			nd.lo = nodes[int(left)&m].lo
		} else {
			nd.lo = lo
		}
	case left != none:
		// The left region grows up to hi. Its tail moves; if that changes
		// its bucket, the re-chaining waits for the end.
		h, nd = left, &nodes[int(left)&m]
		nd.hi = hi
		left = none
		if (lo-1)>>bucketShift != (hi-1)>>bucketShift {
			left = moved
		}
	default:
		// A new region: a retired slot, linked into its class and chained
		// under the bucket of hi-1. The retired list is never empty when
		// Free starts; it is refilled at the end.
		h = a.retired
		nd = &nodes[int(h)&m]
		a.retired = nd.next
		a.nfree++
		nd.lo, nd.hi = lo, hi
		s := classShift(hi - lo)
		c := int(s<<classBits) + int((hi-lo)>>s)
		nd.class = uint32(c)
		p := uint32(c)
		first := nodes[c&m].next
		if first == p {
			a.classes.add(c)
		} else if a.sorted && nodes[int(first)&m].lo < lo {
			p = first
		}
		q := nodes[int(p)&m].next
		nd.prev, nd.next = p, q
		nodes[int(p)&m].next = h
		nodes[int(q)&m].prev = h
		// Chain it before the first region of the bucket ending after
		// it: usually the bucket is empty and the walk takes no step.
		w = (hi - 1) >> bucketShift
		pc := &chains[w]
		if *pc == none {
			s0 := a.tails.level[0]
			old := s0[w>>6]
			s0[w>>6] = old | 1<<(uint64(w)&63)
			if old == 0 {
				a.tails.setAbove(w >> 6)
			}
		} else {
			for *pc != none && nodes[int(*pc)&m].hi < hi {
				pc = &nodes[int(*pc)&m].chain
			}
		}
		nd.chain = *pc
		*pc = h
		if a.retired == none {
			a.newSlot()
		}
		return nil
	}

	n := nd.hi - nd.lo
	s := classShift(n)
	if c := int(s<<classBits) + int(n>>s); c != int(nd.class) {
		// Move nd to the list of class c.
		prev, next := nd.prev, nd.next
		nodes[int(prev)&m].next = next
		nodes[int(next)&m].prev = prev
		if prev == next {
			a.classes.remove(int(nd.class))
		}
		nd.class = uint32(c)
		p := uint32(c)
		first := nodes[c&m].next
		if first == p {
			a.classes.add(c)
		} else if a.sorted && nodes[int(first)&m].lo < nd.lo {
			p = first
		}
		q := nodes[int(p)&m].next
		nd.prev, nd.next = p, q
		nodes[int(p)&m].next = h
		nodes[int(q)&m].prev = h
	}
	switch {
	case left > moved:
		a.remove(left)
	case left == moved:
		a.tailClear(h, lo-1)
		a.tailSet(h, hi-1)
	}
	return nil
}
