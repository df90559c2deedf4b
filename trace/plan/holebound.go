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
// high: those runs and S are pairwise disjoint. The bound is the largest
// such figure over every time and every item with at least two live runs
// then; short runs, which might hide in holes, are not counted. When no
// item ever has a hole it is 0, and the most-bytes-live bound is all there
// is.
//
// On transformer prefill graphs it is what the plans meet: the fused qkv
// of the first layer with K and V moved to the cache, the attention scores
// and the residual stream live at once cannot be packed into the live-byte
// total, and the planner's placements reach this figure (or come within a
// few small buffers, which might hide in holes, of it).

// holeBoundWork caps the live pieces holeBound visits over all sections:
// past it the bound found so far is returned (every partial maximum is
// still a lower bound).
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
		runs    []holeRun // the live runs of the section, item by item, by offset
		lens    []int64   // run lengths, longest first
		sums    []int64   // sums[k]: total of lens[:k]
		holedAt []int32   // where in runs each item with two live runs or more starts
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
				holedAt = append(holedAt, int32(from))
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
			for _, from := range holedAt {
				best = max(best, boundAround(runs, int(from), lens, sums))
			}
		}
		if work > holeBoundWork {
			break
		}
	}
	return best
}

// boundAround is the hole bound of the item whose runs start at runs[from]
// (at least two, by offset), given the section's run lengths longest first
// and their prefix sums.
func boundAround(runs []holeRun, from int, lens, sums []int64) int64 {
	item := runs[from].item
	end := from
	for end < len(runs) && runs[end].item == item {
		end++
	}
	own := runs[from:end]
	var hole int64
	for k := 1; k < len(own); k++ {
		hole = max(hole, own[k].lo-own[k-1].hi)
	}
	// The runs longer than hole, every item's, then less the item's own.
	n := sort.Search(len(lens), func(k int) bool { return lens[k] <= hole })
	outside := sums[n]
	for _, r := range own {
		if r.hi-r.lo > hole {
			outside -= r.hi - r.lo
		}
	}
	return own[len(own)-1].hi - own[0].lo + outside
}
