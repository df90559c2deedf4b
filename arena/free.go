package arena

import (
	"math/bits"

	"github.com/subarena/subarena/internal/invariants"
)

// Free returns [off, off+size) to the free space, coalescing it at once with
// the free regions that end at off and start at off+size. The range may be
// any granule-aligned part of allocated space: a whole block, a piece of
// one, or a span across adjacent blocks. It fails, changing nothing, with
// ErrInvalidSize for size <= 0, ErrMisaligned for an offset or size that is
// not a granule multiple, ErrOutOfRange for a range outside [0, Capacity),
// and ErrNotAllocated when any byte of the range is already free.
//
// Free is one of the arena's hand-written hot paths (with Alloc): the
// neighbour lookups, list and chain edits are inlined by hand, which makes
// it one long function (cyclomatic complexity about 50) on purpose; the
// churn benchmarks and the instruction counts in doc.go are what it is
// kept that way for, and the arenachecked build and CheckInvariants guard
// it.
func (a *Arena) Free(off, size int64) error {
	if invariants.Enabled {
		defer a.verify()
	}
	capB := a.capB
	// size-1 < capB rejects size <= 0 and size > capB; then capB-size >= 0
	// and the unsigned comparison rejects off < 0 as well.
	if uint64(size-1) >= uint64(capB) || (off|size)&a.gmask != 0 || uint64(off) > uint64(capB-size) {
		return a.badFree(off, size)
	}
	sh := a.shift & 63
	lo := off >> sh
	hi := lo + size>>sh

	// The first free region ending after lo either meets the range, so it
	// is not all allocated, or starts at hi (the right neighbour), or lies
	// beyond. It is the first region of lo's bucket ending after lo, or
	// else the first of the next non-empty bucket, whose chain is ordered
	// by end. That bucket is looked for first, while little else is live
	// for the rare call into the deeper levels of the bitmap.
	w := lo >> bucketShift
	x := w + 1
	if s0, i := a.tails.level[0], uint64(x)>>6; i < uint64(len(s0)) {
		if b := s0[i] >> (uint64(x) & 63); b != 0 {
			x += int64(bits.TrailingZeros64(b))
		} else if i++; i < uint64(len(s0)) && s0[i] != 0 {
			// The next word: free regions are seldom 64 buckets apart.
			x = int64(i<<6 | uint64(bits.TrailingZeros64(s0[i])))
		} else {
			x = a.tails.nextAfterWord(i)
		}
	} else {
		x = -1
	}

	base := baseOf(a.nodes)
	chains := a.chains
	left, right := uint32(none), uint32(none)
	if x >= 0 {
		right = chains[x]
	}
	// The walk of lo's bucket also finds the left neighbour, the region
	// ending at lo, unless lo starts a bucket.
	for h := chains[w]; h != none; {
		nd := at(base, h)
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
			nd := at(base, h)
			if nd.hi == lo {
				left = h
				break
			}
			h = nd.chain
		}
	}
	var rn *node
	if right != none {
		rn = at(base, right)
		if rlo := rn.lo; rlo != hi {
			if rlo < hi {
				return a.notAllocated(lo, hi)
			}
			right = none
		}
	}

	a.inUseG -= hi - lo
	h := right
	var nd *node
	switch {
	case right != none:
		// Lowering lo keeps the address order of the class list: no free
		// region lies in [lo, hi). With a left neighbour too, the right
		// node takes the joined region and the left one goes.
		nd = rn
		if left == none {
			nd.lo = lo
			break
		}
		ln := at(base, left)
		nd.lo = ln.lo
		// Out of its class list,
		prev, next := ln.prev, ln.next
		at(base, prev).next = next
		at(base, next).prev = prev
		if prev == next {
			a.classes.remove(int(ln.class))
		}
		// out of its chain,
		wl := (lo - 1) >> bucketShift
		pc := &chains[wl]
		if next := ln.chain; *pc == left {
			*pc = next
			if next == none {
				s0 := a.tails.level[0]
				v := s0[wl>>6] &^ (1 << (uint64(wl) & 63))
				s0[wl>>6] = v
				if v == 0 {
					a.tails.clearAbove(wl >> 6)
				}
			}
		} else {
			for *pc != left {
				pc = &at(base, *pc).chain
			}
			*pc = next
		}
		// and retired.
		ln.class = 0
		ln.next = a.retired
		a.retired = left
		a.nfree--
	case left != none:
		// The left region grows up to hi. If its tail changes bucket, it
		// moves from the end of its chain (no region ends between lo and
		// the bucket's end: it would meet the range or be the right
		// neighbour) to its place in the chain of hi-1.
		h, nd = left, at(base, left)
		nd.hi = hi
		if wl, wh := (lo-1)>>bucketShift, (hi-1)>>bucketShift; wl != wh {
			pc := &chains[wl]
			s0 := a.tails.level[0]
			if *pc == left {
				*pc = none
				v := s0[wl>>6] &^ (1 << (uint64(wl) & 63))
				s0[wl>>6] = v
				if v == 0 {
					a.tails.clearAbove(wl >> 6)
				}
			} else {
				for *pc != left {
					pc = &at(base, *pc).chain
				}
				*pc = none
			}
			pc = &chains[wh]
			if *pc == none {
				old := s0[wh>>6]
				s0[wh>>6] = old | 1<<(uint64(wh)&63)
				if old == 0 {
					a.tails.setAbove(wh >> 6)
				}
			} else {
				for *pc != none && at(base, *pc).hi < hi {
					pc = &at(base, *pc).chain
				}
			}
			nd.chain = *pc
			*pc = left
		}
	default:
		// A new region: a retired slot, linked into its class and chained
		// under the bucket of hi-1. The retired list is never empty when
		// Free starts; it is refilled at the end.
		h = a.retired
		nd = at(base, h)
		a.retired = nd.next
		a.nfree++
		nd.lo, nd.hi = lo, hi
		c := classOf(hi - lo)
		nd.class = uint32(c)
		p := headOf(c)
		first := at(base, p).next
		if first == p {
			a.classes.add(c)
		} else if a.sorted && at(base, first).lo < lo {
			p = first
		}
		q := at(base, p).next
		nd.prev, nd.next = p, q
		at(base, p).next = h
		at(base, q).prev = h
		// Chain it before the first region of the bucket ending after
		// it: usually the bucket is empty and the walk takes no step.
		wh := (hi - 1) >> bucketShift
		pc := &chains[wh]
		if *pc == none {
			s0 := a.tails.level[0]
			old := s0[wh>>6]
			s0[wh>>6] = old | 1<<(uint64(wh)&63)
			if old == 0 {
				a.tails.setAbove(wh >> 6)
			}
		} else {
			for *pc != none && at(base, *pc).hi < hi {
				pc = &at(base, *pc).chain
			}
		}
		nd.chain = *pc
		*pc = h
		a.grown(hi - lo)
		if a.retired == none {
			a.newSlot()
		}
		return nil
	}

	// The grown region is larger than every region it absorbed, and may
	// change class.
	a.grown(nd.hi - nd.lo)
	if c := classOf(nd.hi - nd.lo); c != int(nd.class) {
		prev, next := nd.prev, nd.next
		at(base, prev).next = next
		at(base, next).prev = prev
		if prev == next {
			a.classes.remove(int(nd.class))
		}
		nd.class = uint32(c)
		p := headOf(c)
		first := at(base, p).next
		if first == p {
			a.classes.add(c)
		} else if a.sorted && at(base, first).lo < nd.lo {
			p = first
		}
		q := at(base, p).next
		nd.prev, nd.next = p, q
		at(base, p).next = h
		at(base, q).prev = h
	}
	return nil
}
