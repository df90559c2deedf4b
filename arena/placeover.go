package arena

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena/ranges"
)

// ErrBadExtra: PlaceOver was given extra runs that are not granule-aligned,
// allocated, disjoint and in address order.
var ErrBadExtra = errors.New("arena: bad extra runs")

// Placement is PlaceOver's answer: the block [Offset, Offset+Size) and
// whether it reaches past the capacity (Grow: an unbounded arena must
// GrowTo(Offset+Size) before the block can be taken).
type Placement struct {
	Block
	Grow bool
}

// maxAdjacentSkip bounds how many regions of one class PlaceOver's fit walks
// past because they touch an extra run.
const maxAdjacentSkip = 8

// PlaceOver answers, without changing anything, where a block of size bytes
// goes when the runs extra — allocated bytes their owner could hand over:
// granule-aligned, disjoint, in address order — may be used as well as the
// free space. Free space and extra runs side by side count as one region.
//
// Reuse comes first: the block goes to the lowest region that can hold it
// and whose first size bytes include an extra run, at the region's start.
// Address order keeps the layout that such reuse builds steady from one
// iteration of a program to the next. Otherwise the fit chooses as Alloc
// would with the extra runs freed: the smallest size class that holds the
// request, counting a free region that touches an extra run at the size of
// the whole region it forms with it (so space beside bytes about to be
// handed over is not cut up while a tighter region exists); at equal class
// the region with extra runs, then the lower address. The block then takes
// only free bytes. When nothing fits, an unbounded arena places the block at
// the start of its top region (Grow set) and a bounded one reports false.
//
// The caller commits the answer itself: AllocAt for the free parts of the
// block (after GrowTo when Grow is set), and whatever it does with the
// extra runs the block covers. Cost: O(k log k) for k extra runs plus a
// few list steps for the fit; nothing is allocated.
func (a *Arena) PlaceOver(size int64, extra []ranges.Range) (Placement, bool, error) {
	if uint64(size-1) >= uint64(a.maxSize) {
		return Placement{}, false, a.invalidSize(size)
	}
	for i, x := range extra {
		if x.Hi <= x.Lo || (x.Lo|x.Hi)&a.gmask != 0 || x.Lo < 0 || x.Hi > a.capB ||
			(i > 0 && x.Lo < extra[i-1].Hi) || !a.IsAllocated(x.Lo, x.Len()) {
			return Placement{}, false, fmt.Errorf("%w: run %d %v", ErrBadExtra, i, x)
		}
	}
	sh := a.shift & 63
	n := (size + a.gmask) >> sh << sh
	// Regions holding extra runs, in address order: reuse, and the best
	// of them for the fit.
	best, bestClass := Placement{Block: Block{Offset: -1}}, -1
	top := int64(-1)
	for i := 0; i < len(extra); {
		lo, hi, next := a.extraRegion(extra, i)
		if hi-lo >= n && extra[i].Lo < lo+n {
			return Placement{Block: Block{Offset: lo, Size: n}}, true, nil
		}
		if hi-lo >= n {
			if c := classOf((hi - lo) >> sh); bestClass < 0 || c < bestClass {
				best, bestClass = Placement{Block: Block{Offset: lo, Size: n}}, c
			}
		}
		if next == len(extra) && hi == a.capB {
			top = lo
		}
		i = next
	}
	// The free regions that touch no extra run.
	if h, c := a.fitApart(n>>sh, extra); h != none && (bestClass < 0 || c < bestClass) {
		return Placement{Block: Block{Offset: a.node(h).lo << sh, Size: n}}, true, nil
	}
	if bestClass >= 0 {
		return best, true, nil
	}
	if !a.unbounded {
		return Placement{}, false, nil
	}
	if top < 0 {
		top = a.capB
		if a.capG > 0 {
			if t := a.tailNode(a.capG); t != none {
				top = a.node(t).lo << sh
			}
		}
	}
	if (top+n)>>sh > maxGranules {
		return Placement{}, false, a.tooLarge(size)
	}
	return Placement{Block: Block{Offset: top, Size: n}, Grow: top+n > a.capB}, true, nil
}

// extraRegion returns the region [lo, hi) of free space and extra runs side
// by side around extra[i], and the index of the first extra run after it.
func (a *Arena) extraRegion(extra []ranges.Range, i int) (lo, hi int64, next int) {
	lo, hi = extra[i].Lo, extra[i].Hi
	if r, ok := a.FreeRegionAt(lo - 1); ok {
		lo = r.Offset
	}
	next = i + 1
	for {
		if r, ok := a.FreeRegionAt(hi); ok {
			hi = r.End()
		}
		if next < len(extra) && extra[next].Lo == hi {
			hi = extra[next].Hi
			next++
			continue
		}
		return lo, hi, next
	}
}

// fitApart returns the free region Alloc's fit would take for n granules
// among those that touch no extra run, and its class; none when no class
// offers one within maxAdjacentSkip steps. Regions of n's own class are
// checked for size; the classes above hold only regions that fit.
func (a *Arena) fitApart(n int64, extra []ranges.Range) (uint32, int) {
	for c := a.classes.first(classOf(n)); c >= 0; c = a.classes.first(c + 1) {
		head := headOf(c)
		steps := 0
		for h := a.node(head).next; h != head && steps < maxAdjacentSkip; h = a.node(h).next {
			steps++
			nd := a.node(h)
			if nd.hi-nd.lo < n || touchesExtra(nd.lo<<a.shift, nd.hi<<a.shift, extra) {
				continue
			}
			return h, c
		}
		if c+1 >= classSlots {
			break
		}
	}
	return none, -1
}

// touchesExtra reports whether the free region [lo, hi) borders an extra
// run (extra is in address order; free space never overlaps it).
func touchesExtra(lo, hi int64, extra []ranges.Range) bool {
	// The first extra run ending at or after lo.
	i, j := 0, len(extra)
	for i < j {
		m := int(uint(i+j) >> 1)
		if extra[m].Hi < lo {
			i = m + 1
		} else {
			j = m
		}
	}
	return i < len(extra) && (extra[i].Hi == lo || extra[i].Lo == hi)
}
