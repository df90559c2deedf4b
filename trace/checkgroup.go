package trace

import (
	"slices"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// The checker's side of placements: a host and the buffers placed over it form one group.

// sameMap reports whether two arena layouts put element i over element i.
func sameMap(a, b strided.Layout) bool {
	return mapOf(a, 0).equal(mapOf(b, 0))
}

// groupPieces partitions the bytes of host h (at arena offset off) and of the buffers
// placed over it by the step that lets them go: each discard of a view of any of them, in
// step order, takes the bytes of its view not taken before; the rest go at the last
// release of the group, or never when any of them is held to the end. For a host with
// nothing placed over it these are its own death pieces.
func (c *checker) groupPieces(h int, off int64) []piece {
	p := c.p
	var members []int
	if c.ps != nil {
		members = c.ps.members[h]
	}
	if len(members) == 0 {
		return deathPieces(p, h, off)
	}
	type discard struct {
		step int
		ref  Ref
	}
	var ds []discard
	final := p.Buffers[h].Release
	for _, b := range append([]int{h}, members...) {
		for _, v := range p.Buffers[b].Discards {
			ds = append(ds, discard{p.Views[v].Discard, Ref{Buffer: b, View: v}})
		}
		if rel := p.Buffers[b].Release; rel < 0 || final < 0 {
			final = -1
		} else {
			final = max(final, rel)
		}
	}
	slices.SortFunc(ds, func(a, b discard) int { return a.step - b.step })
	rest := ranges.FromRanges(ranges.Range{Lo: off, Hi: off + p.Buffers[h].Size})
	var out []piece
	for _, d := range ds {
		fp := c.ps.hostFootprint(p, d.ref)
		_ = fp.Translate(off)
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		out = append(out, piece{set: got, death: d.step})
	}
	if !rest.IsEmpty() {
		death := never
		if final >= 0 {
			death = final
		}
		out = append(out, piece{set: rest, death: death})
	}
	return out
}

// owner is one buffer of a group as the group check sees it.
type owner struct {
	buf   int
	first int          // its first op, len(Ops) when unused
	uses  []*placedUse // its uses, in op order
	cover ranges.Set   // its arena bytes
	held  ranges.Set   // its arena bytes it holds to the end of the trace
}

// checkGroup reports every violation among the buffers of group g (a host with buffers
// placed over it) and returns how many pairs of them share bytes. The host goes first,
// then the placed buffers by first op (then by allocation): every op using a byte through
// an earlier buffer must happen-before every op using it through a later one, except one
// inplace op putting element i over element i, and bytes an earlier buffer holds to the
// end may not be used through a later one.
func (c *checker) checkGroup(g *placed) int {
	p := c.p
	bufs := append([]int{g.buf}, c.ps.members[g.buf]...)
	owners := make([]owner, len(bufs))
	at := make(map[int]int, len(bufs))
	for i, b := range bufs {
		at[b] = i
		o := &owners[i]
		o.buf, o.first = b, len(p.Ops)
		o.cover, _ = c.arena(Ref{Buffer: b, View: -1}, g.off)
		if p.Buffers[b].Release < 0 {
			o.held = o.cover.Clone()
			for _, v := range p.Buffers[b].Discards {
				fp, _ := c.arena(Ref{Buffer: b, View: v}, g.off)
				o.held.RemoveSet(&fp)
			}
		}
	}
	for i := range g.uses {
		u := &g.uses[i]
		o := &owners[at[u.buf]]
		if len(o.uses) == 0 {
			o.first = u.op
		}
		o.uses = append(o.uses, u)
	}
	slices.SortStableFunc(owners[1:], func(a, b owner) int {
		if a.first != b.first {
			return a.first - b.first
		}
		return p.Buffers[a.buf].Step - p.Buffers[b.buf].Step
	})
	pairs := 0
	for i := range owners {
		x := &owners[i]
		for j := i + 1; j < len(owners); j++ {
			y := &owners[j]
			if _, hit := x.cover.OverlapsSet(&y.cover); !hit {
				continue
			}
			pairs++
			for _, ux := range x.uses {
				for _, uy := range y.uses {
					s := ranges.Intersect(&ux.set, &uy.set)
					if s.IsEmpty() {
						continue
					}
					if !x.held.IsEmpty() {
						if h := ranges.Intersect(&s, &x.held); !h.IsEmpty() {
							c.emit(ViolationTakenOver, ux, uy, &h)
							s.RemoveSet(&x.held)
							if s.IsEmpty() {
								continue
							}
						}
					}
					if rule := c.orderRule(ux, uy); rule != "" {
						c.emit(rule, ux, uy, &s)
					}
				}
			}
		}
	}
	return pairs
}

// deathPieces partitions buffer b's bytes (placed at off) by the step that lets them go:
// each discard takes the bytes of its view not discarded before; the rest go at the
// buffer's release, or never.
func deathPieces(p *Program, b int, off int64) []piece {
	buf := &p.Buffers[b]
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
	var out []piece
	for _, v := range buf.Discards {
		fp, _ := p.Footprint(Ref{Buffer: b, View: v})
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		_ = got.Translate(off)
		out = append(out, piece{set: got, death: p.Views[v].Discard})
	}
	if !rest.IsEmpty() {
		death := never
		if buf.Release >= 0 {
			death = buf.Release
		}
		_ = rest.Translate(off)
		out = append(out, piece{set: rest, death: death})
	}
	return out
}
