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
	sh := a.shift & 63
	if size <= 0 || (off|size)&a.gmask != 0 || off < 0 || off > a.capG<<sh-size {
		return a.badFree(off, size)
	}
	lo := off >> sh
	hi := lo + size>>sh
	nodes := a.nodes
	chains := a.chains
	t0 := a.tails.level[0]

	// The first free region ending after lo either meets the range, which
	// is then not all allocated, or starts at hi (the right neighbour), or
	// lies beyond.
	var t int64
	if m := t0[lo>>6] >> (uint64(lo) & 63); m != 0 {
		t = lo + int64(bits.TrailingZeros64(m))
	} else {
		t = a.tails.next((lo|63) + 1)
	}
	right := int32(none)
	if t >= 0 {
		h := chains[t>>6]
		for nodes[h].hi-1 != t {
			h = nodes[h].chain
		}
		if rlo := nodes[h].lo; rlo <= hi {
			if rlo < hi {
				return a.notAllocated(off, size)
			}
			right = h
		}
	}
	// The left neighbour is the region whose last granule is lo-1.
	left := int32(none)
	if g := lo - 1; g >= 0 && t0[g>>6]&(1<<(uint64(g)&63)) != 0 {
		h := chains[g>>6]
		for nodes[h].hi != lo {
			h = nodes[h].chain
		}
		left = h
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
