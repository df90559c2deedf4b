package plan

import (
	"cmp"
	"slices"
	"sort"
)

// The hole bound: a lower bound that sees the fragmentation the most-bytes-
// live-at-once bound misses.
//
// An item is rigid: its bytes keep their offsets relative to each other.
// When only some of them are live (Q, K and V rows of a fused projection
// whose K and V parts died), the live bytes of the item at a time t form
// runs separated by holes, and the item pins its whole span at t, from its
// first live byte to its last, except for what fits in its holes:
//
//	item i at t:   [##]....[##]....[##]      span S, largest hole h
//	run r of j:         [######]             |r| > h: cannot lie inside S
//
// A live run r of another item j (a maximal run of j's bytes live at t) is
// contiguous and may share no byte with i's live runs. If it met S without
// fitting inside one hole it would contain a live byte of i: S starts and
// ends with live bytes and its holes are separated by live runs. So every
// run longer than h lies wholly outside S, and any placement is at least
//
//	|S| + Σ { |r| : r a live run at t of an item other than i, |r| > h }
//
// high: those runs and S are pairwise disjoint. A shorter run r may still
// lie inside S, but only inside one hole, which puts j at an offset
// relative to i within a range fixed by r and the hole; if the pair's
// conflicts at every time forbid all of those offsets, for every hole long
// enough, r lies outside S too and is counted:
//
//	item i at t0:  [##################]      all live once (computed)
//	item i at t:   [##]....[##]....[##]      holes where bytes died
//	item j:        [#]                       live at t0 and t: in no hole
//
// A small input live through the whole graph meets every byte of a fused
// projection at the time it is computed, so it never hides in the
// projection's holes later. The bound is the largest such figure over
// every time and every item with at least two live runs then; short runs
// that might hide in a hole are not counted. When no item ever has a hole
// it is 0, and the most-bytes-live bound is all there is.
//
// On transformer prefill graphs it is what the plans meet: the fused qkv
// of the first layer with K and V moved to the cache, the attention scores
// and the residual stream live at once cannot be packed into the live-byte
// total, and the planner's placements reach this figure: the positions
// and the output ids, live throughout, sit beside the projection, not in
// its holes.

// holeBoundWork caps holeBound's work over all sections (live pieces
// visited, edges and holes tried for short runs): past it the bound found
// so far is returned (every partial maximum is still a lower bound).
const holeBoundWork = 1 << 25

// holeRun is one maximal live run of an item in a section.
type holeRun struct {
	item   int32
	lo, hi int64
}

// holeBound returns the hole bound of c (see above), 0 when no item has
// two pieces.
func (c *compiled) holeBound() int64 {
	holed := make([]bool, c.n)
	anyHoled := false
	for i := range c.n {
		if len(c.pieces[i]) >= 2 {
			holed[i], anyHoled = true, true
		}
	}
	if !anyHoled {
		return 0
	}
	var (
		best    int64
		work    int
		runs    []holeRun  // the live runs of the section, item by item, by offset
		lens    []int64    // run lengths, longest first
		sums    []int64    // sums[k]: total of lens[:k]
		holedAt [][2]int32 // where in runs the runs of each item with two or more start and end
		edgeTo  []int32    // scratch for unhidden: per item, its edge from the holed item, plus one
	)
	for k := range c.nsec {
		items := c.secItems[k]
		if !slices.ContainsFunc(items, func(i int32) bool { return holed[i] }) {
			continue
		}
		t := c.times[k]
		runs, holedAt = runs[:0], holedAt[:0]
		for _, i := range items {
			from := len(runs)
			for _, pc := range c.pieces[i] {
				if pc.Start <= t && t < pc.End {
					runs = append(runs, holeRun{item: i, lo: pc.Lo, hi: pc.Hi})
				}
			}
			work += len(c.pieces[i])
			own := runs[from:]
			if len(own) >= 2 {
				slices.SortFunc(own, func(a, b holeRun) int { return cmp.Compare(a.lo, b.lo) })
				holedAt = append(holedAt, [2]int32{int32(from), int32(len(runs))})
			}
		}
		if len(holedAt) > 0 {
			lens = lens[:0]
			for _, r := range runs {
				lens = append(lens, r.hi-r.lo)
			}
			slices.SortFunc(lens, func(a, b int64) int { return cmp.Compare(b, a) })
			sums = append(sums[:0], 0)
			for _, l := range lens {
				sums = append(sums, sums[len(sums)-1]+l)
			}
			for _, at := range holedAt {
				from, end := int(at[0]), int(at[1])
				b, hole, short := boundAround(runs, from, end, lens, sums)
				if b+short > best {
					// Some short runs may not hide in a hole after all.
					var w int
					b, w = c.unhidden(runs, from, end, hole, b, &edgeTo)
					work += w
				}
				best = max(best, b)
			}
		}
		if work > holeBoundWork {
			break
		}
	}
	return best
}

// boundAround is the hole bound of the item whose runs are runs[from:end]
// (at least two, by offset), given the section's run lengths longest first
// and their prefix sums, and the item's largest hole.
func boundAround(runs []holeRun, from, end int, lens, sums []int64) (bound, hole, short int64) {
	own := runs[from:end]
	for k := 1; k < len(own); k++ {
		hole = max(hole, own[k].lo-own[k-1].hi)
	}
	// The runs longer than hole, every item's, then less the item's own.
	n := sort.Search(len(lens), func(k int) bool { return lens[k] <= hole })
	outside, short := sums[n], sums[len(lens)]-sums[n]
	for _, r := range own {
		if r.hi-r.lo > hole {
			outside -= r.hi - r.lo
		} else {
			short -= r.hi - r.lo
		}
	}
	return own[len(own)-1].hi - own[0].lo + outside, hole, short
}

// unhidden adds to bound, the hole bound of the item whose runs are
// runs[from:end] with largest hole hole, every other item's run no longer than
// hole that cannot hide in one of the item's holes: a run inside a hole
// puts its item at a relative offset to the holed one that the pair's
// conflicts at other times may forbid (a small input live through the
// whole graph cannot sit in a hole of a tensor whose bytes were all live
// once). It returns the new bound and the work done. edgeTo is scratch of
// one entry per item, left zeroed.
func (c *compiled) unhidden(runs []holeRun, from, end int, hole, bound int64, edgeTo *[]int32) (int64, int) {
	own := runs[from:end]
	item := own[0].item
	if len(*edgeTo) < c.n {
		*edgeTo = make([]int32, c.n)
	}
	to := *edgeTo
	es := c.edges[item]
	for k, e := range es {
		to[e.other] = int32(k) + 1
	}
	work := len(es)
	for k, r := range runs {
		if (k >= from && k < end) || r.hi-r.lo > hole {
			continue
		}
		hidden := true // when no edge says otherwise
		if e := to[r.item]; e > 0 {
			var w int
			hidden, w = c.hides(r, own, es[e-1].rels)
			work += w
		}
		if !hidden {
			bound += r.hi - r.lo
		}
	}
	for _, e := range es {
		to[e.other] = 0
	}
	return bound, work
}

// hides reports whether run r of an item can lie inside one of the holes
// between runs own of a holed item, at a relative offset the pair's
// forbidden intervals rels (of the holed item's offset less r's item's)
// leave free, and the work done.
func (c *compiled) hides(r holeRun, own []holeRun, rels []rel) (bool, int) {
	a := c.align
	work := 0
	for k := 1; k < len(own); k++ {
		hl, hh := own[k-1].hi, own[k].lo
		if hh-hl < r.hi-r.lo {
			continue
		}
		// r lies in [hl, hh) iff e = x_holed - x_r is in [r.hi-hh, r.lo-hl].
		e, top := alignUp(r.hi-hh, a), r.lo-hl
		at := sort.Search(len(rels), func(m int) bool { return rels[m].hi > e })
		for ; at < len(rels) && e <= top && rels[at].lo <= e; at++ {
			e = max(e, alignUp(rels[at].hi, a))
			work++
		}
		work++
		if e <= top {
			return true, work
		}
	}
	return false, work
}
