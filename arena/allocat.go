package arena

import (
	"errors"
	"fmt"
)

// ErrNotFree: AllocAt was asked for a range some byte of which is already
// allocated.
var ErrNotFree = errors.New("arena: range not free")

// AllocAt allocates exactly [off, off+size), which must be free: the
// inverse of Free. The range may be any granule-aligned part of one free
// region; what is left of the region on either side stays free. It fails,
// changing nothing, with ErrInvalidSize, ErrMisaligned or ErrOutOfRange for
// a bad range and ErrNotFree when any byte of it is allocated.
//
// The Allocator uses it to lend held bytes to one placement decision: it
// frees them, places the buffer itself (AllocAt at a region FreeRegionAt
// found) or lets Alloc choose over clean and lent space alike, and takes
// back with AllocAt whatever the buffer left.
func (a *Arena) AllocAt(off, size int64) error {
	sh := a.shift & 63
	if uint64(size-1) >= uint64(a.capB) || (off|size)&a.gmask != 0 || uint64(off) > uint64(a.capB-size) {
		return a.badAllocAt(off, size)
	}
	lo := off >> sh
	hi := lo + size>>sh
	// The free region holding lo is the first one ending after lo.
	h := a.after(lo)
	if h == none {
		return fmt.Errorf("arena: alloc at [%d, %d): %w", off, off+size, ErrNotFree)
	}
	nd := a.node(h)
	rlo, rhi := nd.lo, nd.hi
	if rlo > lo || rhi < hi {
		return fmt.Errorf("arena: alloc at [%d, %d): %w", off, off+size, ErrNotFree)
	}
	switch {
	case rlo == lo && rhi == hi:
		a.remove(h)
	case rlo == lo:
		// Keep the right part: raising lo keeps address order.
		nd.lo = hi
		if c := classOf(rhi - hi); c != int(nd.class) {
			a.relink(h, c)
		}
	case rhi == hi:
		// Keep the left part: its last granule moves.
		nd.hi = lo
		a.moveTail(h, rhi-1, lo-1)
		if c := classOf(lo - rlo); c != int(nd.class) {
			a.relink(h, c)
		}
	default:
		// Keep both: the node keeps the right part and its tail, a new
		// node takes the left part.
		nd.lo = hi
		if c := classOf(rhi - hi); c != int(nd.class) {
			a.relink(h, c)
		}
		a.insert(rlo, lo)
	}
	u := a.inUseG + (hi - lo)
	a.inUseG = u
	if u > a.peakG {
		a.peakG = u
	}
	if hi > a.highG {
		a.highG = hi
	}
	return nil
}

//go:noinline
func (a *Arena) badAllocAt(off, size int64) error {
	switch {
	case size <= 0:
		return fmt.Errorf("arena: alloc at [%d, +%d): %w", off, size, ErrInvalidSize)
	case (off|size)&a.gmask != 0:
		return fmt.Errorf("arena: alloc at [%d, +%d) with granule %d: %w", off, size, a.gmask+1, ErrMisaligned)
	}
	return fmt.Errorf("arena: alloc at [%d, +%d) outside [0, %d): %w", off, size, a.capG<<a.shift, ErrOutOfRange)
}
