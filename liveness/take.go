package liveness

import (
	"fmt"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// SafeRuns appends to dst the held bytes a writer may take now: maximal
// granule-aligned runs of fully held granules whose pending users are all
// known and satisfy safe. safe must be monotone in the seq — if it holds
// for e#s it holds for every earlier op of e — as every reuse rule is
// (sasync.Event.SafeUnder): only each engine's latest user of a run is
// asked, so the cost is O(log n + k·engines) per held run for the k keys
// over it, whatever the number of users. In whole mode a piece qualifies only as a whole
// (every user of the piece safe). It returns nil in the after-users and
// unsafe modes, where nothing is taken before its users complete.
func (x *Index) SafeRuns(dst []ranges.Range, safe func(sasync.Event) bool) []ranges.Range {
	if !x.mode.Fenced() || x.held.IsEmpty() {
		return dst
	}
	if x.mode.Whole() {
		for _, p := range x.pieces {
			if !x.allSafe(&p.bytes, safe) {
				continue
			}
			alignInInto(&x.nearHeld, &p.bytes, x.granule)
			dst = append(dst, x.nearHeld.Runs()...)
		}
		return dst
	}
	alignInInto(&x.wholeGranules, &x.held, x.granule)
	for _, c := range x.wholeGranules.Runs() {
		x.pinned.Reset()
		x.tree.Overlapping(c.Lo, c.Hi, func(g *group) bool {
			if !g.safe(safe) {
				x.pinned.Add(ranges.Range{Lo: g.lo, Hi: g.hi}.Intersect(c))
			}
			return true
		})
		dst = append(dst, x.unpinnedOf(c)...)
	}
	return dst
}

// TakeRanges hands the held bytes rs (disjoint, granule-aligned, every byte
// held; take them from SafeRuns) to a new owner and returns their fence: the
// join of the events of the pending users covering them, which the new
// owner's users must be ordered after. All leave the held bytes before
// anything else is decided, so in whole mode what remains of a piece
// (returned through free if these ranges held its last pins) never includes
// bytes just taken. Nothing changes on error.
func (x *Index) TakeRanges(rs []ranges.Range, free func(ranges.Range)) (sasync.Clock, error) {
	if invariants.Enabled {
		defer x.verify()
	}
	var fence sasync.Clock
	g := x.granule
	for i, r := range rs {
		if r.Empty() || r.Lo&(g-1) != 0 || r.Hi&(g-1) != 0 || !x.held.ContainsRange(r) {
			return fence, fmt.Errorf("%w: take %v", ErrInvalidRange, r)
		}
		for _, o := range rs[:i] {
			if o.Overlaps(r) {
				return fence, fmt.Errorf("%w: take %v twice", ErrInvalidRange, r)
			}
		}
	}
	for _, r := range rs {
		f, _ := x.Fence(r)
		fence.Join(&f)
		x.held.Remove(r)
		x.heldBytes -= r.Len()
	}
	x.touched.Reset()
	for i := 0; i < len(x.pieces); i++ {
		p := &x.pieces[i]
		hit := false
		for _, r := range rs {
			if _, ok := p.bytes.Overlaps(r); ok {
				p.bytes.Remove(r)
				hit = true
			}
		}
		if !hit {
			continue
		}
		if p.bytes.IsEmpty() {
			x.dropPiece(i)
			i--
			continue
		}
		// The users that pinned the piece may all have covered rs.
		x.touched.AddSet(&p.bytes)
	}
	x.reclaim(free)
	return fence, nil
}
