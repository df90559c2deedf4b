package arena

// Free returns [off, off+size) to the free space, coalescing it at once with
// the free regions that end at off and start at off+size. The range may be
// any granule-aligned part of allocated space: a whole block, a piece of
// one, or a span across adjacent blocks. It fails, changing nothing, with
// ErrInvalidSize for size <= 0, ErrMisaligned for an offset or size that is
// not a granule multiple, ErrOutOfRange for a range outside [0, Capacity),
// and ErrNotAllocated when any byte of the range is already free.
func (a *Arena) Free(off, size int64) error {
	sh := a.shift & 63
	// size-1 < capB rejects size <= 0 and size > capB; then capB-size >= 0
	// and the unsigned comparison rejects off < 0 as well.
	if uint64(size-1) >= uint64(a.capB) || (off|size)&a.gmask != 0 || uint64(off) > uint64(a.capB-size) {
		return a.badFree(off, size)
	}
	lo := off >> sh
	hi := lo + size>>sh
	nodes := a.nodes
	chains := a.chains

	// One walk of the bucket of lo finds the left neighbour (ending at lo)
	// and the first region ending after lo, which either meets the range,
	// so it is not all allocated, or starts at hi (the right neighbour), or
	// lies beyond.
	left, right := int32(none), int32(none)
	w := lo >> bucketShift
	for h := chains[w]; h != none; h = nodes[h].chain {
		if rhi := nodes[h].hi; rhi == lo {
			left = h
		} else if rhi > lo && (right == none || rhi < nodes[right].hi) {
			right = h
		}
	}
	if lo&(1<<bucketShift-1) == 0 && lo > 0 {
		// lo-1 lies in the bucket below.
		for h := chains[w-1]; h != none; h = nodes[h].chain {
			if nodes[h].hi == lo {
				left = h
				break
			}
		}
	}
	if right == none {
		if w = a.tails.next(w + 1); w >= 0 {
			right = chains[w]
			for h := nodes[right].chain; h != none; h = nodes[h].chain {
				if nodes[h].hi < nodes[right].hi {
					right = h
				}
			}
		}
	}
	if right != none {
		if rlo := nodes[right].lo; rlo != hi {
			if rlo < hi {
				return a.notAllocated(off, size)
			}
			right = none
		}
	}

	switch {
	case left == none && right == none:
		a.insert(lo, hi)
	case left == none:
		// No free region lies in [lo, hi), so lowering lo keeps the
		// address order of the class list.
		nd := &nodes[right]
		nd.lo = lo
		if c := classOf(nd.hi - lo); c != int(nd.class) {
			a.relink(right, c)
		}
	case right == none:
		nd := &nodes[left]
		nd.hi = hi
		a.moveTail(left, lo-1, hi-1)
		if c := classOf(hi - nd.lo); c != int(nd.class) {
			a.relink(left, c)
		}
	default:
		nd := &nodes[right]
		nd.lo = nodes[left].lo
		a.remove(left)
		if c := classOf(nd.hi - nd.lo); c != int(nd.class) {
			a.relink(right, c)
		}
	}
	a.inUseG -= hi - lo
	return nil
}
