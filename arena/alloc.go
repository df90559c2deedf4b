package arena

import (
	"math"
	"math/bits"

	"github.com/subarena/subarena/internal/invariants"
)

// leanScan bounds FitLean's walk of the request's own class.
const leanScan = 8

// Alloc returns a free block of at least size bytes (size rounded up to the
// granule), now allocated. It fails with ErrInvalidSize for size <= 0 or a
// size beyond any possible arena, and with a *NoSpaceError (ErrNoSpace)
// when a bounded arena has no free region large enough. An unbounded arena
// grows at the top instead of failing.
//
// FitLean first walks up to leanScan regions of the request's own class,
// when the request does not start it, for the first that fits. Then both
// fits look at the smallest classes whose every region fits the request.
// FitFast takes the first region of the first of them; FitLean takes the
// lower-addressed of the first regions of the first two (the second looked
// for only in the same word of the class bitmap). Both carve the block from
// the low end of the region.
func (a *Arena) Alloc(size int64) (Block, error) {
	if invariants.Enabled {
		defer a.verify()
	}
	// size-1 < maxSize rejects size <= 0 and size > maxSize at once.
	if uint64(size-1) >= uint64(a.maxSize) {
		return Block{}, a.invalidSize(size)
	}
	base := baseOf(a.nodes)
	sh := a.shift & 63
	n := (size + a.gmask) >> sh
	// n's own class o, from the bits of float64(n) as in classOf; n lies
	// inside o, not at its start, when a mantissa bit below the class
	// bits is set. Then o also holds regions smaller than n: FitLean walks
	// a few of its first ones (address order) for one that fits, and the
	// search goes on from the class above, all of whose regions fit.
	fb := math.Float64bits(float64(n))
	c := int(fb>>(52-classBits)) - classBias
	if n < 1<<classBits {
		c = int(n)
	}
	var h uint32
	if fb&(1<<(52-classBits)-1) != 0 {
		if a.sorted {
			head := headOf(c)
			k := leanScan
			for x := at(base, head).next; x != head; x = at(base, x).next {
				if nd := at(base, x); nd.hi-nd.lo >= n {
					h = x
					goto carve
				}
				if k--; k == 0 {
					break
				}
			}
		}
		c++
	}
	{
		// The first non-empty class at or above c: its word of the class
		// bitmap, masked, is kept for FitLean's second class.
		wi := uint(c) >> 6 & (classWordSlots - 1)
		bm := a.classes.word[wi] & (^uint64(0) << (uint(c) & 63))
		up := int(wi << 6)
		if bm != 0 {
			up |= bits.TrailingZeros64(bm)
		} else {
			t := a.classes.top & (^uint64(0) << (wi + 1)) // wi+1 <= 16: no shift by 64
			if t == 0 {
				return a.allocLast(size, n)
			}
			wi = uint(bits.TrailingZeros64(t)) & (classWordSlots - 1)
			bm = a.classes.word[wi]
			up = int(wi<<6) | bits.TrailingZeros64(bm)
		}
		h = at(base, headOf(up)).next
		if bm &= bm - 1; bm != 0 && a.sorted {
			// The next non-empty class in the same word: take its first
			// region if that lies lower.
			h2 := at(base, headOf(int(wi<<6)|bits.TrailingZeros64(bm))).next
			if at(base, h2).lo < at(base, h).lo {
				h = h2
			}
		}
	}

carve:
	nd := at(base, h)
	lo := nd.lo
	if nd.hi-lo == a.maxG {
		a.maxN-- // the region shrinks or goes (shrunk, written out)
	}
	if rest := nd.hi - lo - n; rest == 0 {
		// Exact fit: the region goes, out of its list and its chain, and
		// its slot is retired.
		prev, next := nd.prev, nd.next
		at(base, prev).next = next
		at(base, next).prev = prev
		if prev == next {
			a.classes.remove(int(nd.class))
		}
		w := (nd.hi - 1) >> bucketShift
		p := &a.chains[w]
		next = nd.chain
		if *p == h {
			*p = next
			if next == none {
				s0 := a.tails.level[0]
				v := s0[w>>6] &^ (1 << (uint64(w) & 63))
				s0[w>>6] = v
				if v == 0 {
					a.tails.clearAbove(w >> 6)
				}
			}
		} else {
			for p = &at(base, *p).chain; *p != h; p = &at(base, *p).chain {
			}
			*p = next
		}
		nd.class = 0
		nd.next = a.retired
		a.retired = h
		a.nfree--
	} else {
		// The region keeps its tail; only its size class may change. In an
		// address-ordered list raising lo keeps the order.
		nd.lo = lo + n
		if c := classOf(rest); c != int(nd.class) {
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
			} else if a.sorted && at(base, first).lo < lo+n {
				p = first
			}
			q := at(base, p).next
			nd.prev, nd.next = p, q
			at(base, p).next = h
			at(base, q).prev = h
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

// allocLast serves a request no class at or above its rounded-up class
// can: only a region of n's own class, which holds sizes below n too, may
// still fit. Failing that, allocSlow grows or fails.
func (a *Arena) allocLast(size, n int64) (Block, error) {
	c := classOf(n)
	if c >= int(a.nheads) {
		// Larger than the whole arena.
		return a.allocSlow(size, n)
	}
	head := headOf(c)
	for h := a.node(head).next; h != head; h = a.node(h).next {
		if nd := a.node(h); nd.hi-nd.lo >= n {
			// Carve from the low end, as Alloc does.
			lo := nd.lo
			a.shrunk(nd.hi - lo)
			if nd.hi-lo == n {
				a.remove(h)
			} else {
				nd.lo = lo + n
				if c := classOf(nd.hi - nd.lo); c != int(nd.class) {
					a.relink(h, c)
				}
			}
			a.inUseG += n
			a.peakG = max(a.peakG, a.inUseG)
			a.highG = max(a.highG, lo+n)
			return Block{Offset: lo << a.shift, Size: n << a.shift}, nil
		}
	}
	return a.allocSlow(size, n)
}

// allocSlow serves a request no free region can hold: an unbounded arena
// grows, a bounded one fails with the figures.
func (a *Arena) allocSlow(size, n int64) (Block, error) {
	if !a.unbounded {
		return Block{}, a.noSpace(size, n)
	}
	// Place at the start of the free region that ends at the top, if any,
	// else at the top; the capacity becomes the block's end.
	lo, top := a.capG, uint32(none)
	if a.capG > 0 {
		if top = a.tailNode(a.capG); top != none {
			lo = a.node(top).lo
		}
	}
	if n > maxGranules-lo {
		return Block{}, a.tooLarge(size)
	}
	if top != none {
		a.shrunk(a.node(top).hi - lo)
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
