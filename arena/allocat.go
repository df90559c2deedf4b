package arena

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena/internal/invariants"
)

// ErrNotFree: AllocAt was asked for a range some byte of which is already
// allocated. AllocAt's error matches it with errors.Is.
var ErrNotFree = errors.New("arena: range not free")

// AllocAt allocates exactly [off, off+size), which must be free: the
// inverse of Free. The range may be any granule-aligned part of one free
// region; what is left of the region on either side stays free. It fails,
// changing nothing, with ErrInvalidSize, ErrMisaligned or ErrOutOfRange for
// a bad range and ErrNotFree when any byte of it is allocated.
//
// The Allocator uses it to commit a placement it chose over clean space
// and held bytes side by side (found with FreeRegionAt): it takes exactly
// the clean parts of the chosen block.
func (a *Arena) AllocAt(off, size int64) error {
	if invariants.Enabled {
		defer a.verify()
	}
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
	a.shrunk(rhi - rlo)
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

// GrowTo extends an unbounded arena so that it ends at end (a multiple of
// the granule): the new bytes are free, one region with the free region
// that ended at the old top, if any. An end at or below the capacity
// changes nothing. It fails, changing nothing, with ErrInvalidConfig for a
// bounded arena, ErrMisaligned for an unaligned end and ErrInvalidSize for
// an end beyond the largest arena.
//
// The Allocator uses it to place a buffer over held bytes at the top of
// the arena and past it, which Alloc would do by growing but cannot be
// asked about without doing it.
func (a *Arena) GrowTo(end int64) error {
	if invariants.Enabled {
		defer a.verify()
	}
	if !a.unbounded {
		return fmt.Errorf("arena: grow to %d: %w: the arena is bounded", end, ErrInvalidConfig)
	}
	if end&a.gmask != 0 {
		return fmt.Errorf("arena: grow to %d: %w", end, ErrMisaligned)
	}
	hi := end >> (a.shift & 63)
	if hi <= a.capG {
		return nil
	}
	if hi > maxGranules {
		return fmt.Errorf("arena: grow to %d: %w", end, ErrInvalidSize)
	}
	lo := a.capG
	if a.capG > 0 {
		if top := a.tailNode(a.capG); top != none {
			lo = a.node(top).lo
			a.shrunk(a.capG - lo)
			a.remove(top)
		}
	}
	a.capG = hi
	a.capB = a.capG << a.shift
	if buckets := (a.capG + 1<<bucketShift - 1) >> bucketShift; buckets > a.tails.size() {
		a.tails.grow(buckets)
		a.resizeChains(true)
	}
	a.insert(lo, hi)
	return nil
}
