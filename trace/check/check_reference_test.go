package check

import (
	"math"
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// The checker as it was before its sweep: every pair of placed buffers whose ranges
// overlap, every pair of their uses, every pair of their pieces. Kept as the oracle the
// sweep must agree with, report for report.

var _ = math.MaxInt

// refHappensBefore asks the Timeline itself, not the Order's copy of its clocks.
func refHappensBefore(o *trace.Order, a, b int) bool {
	hb, err := o.Timeline.HappensBefore(o.Events[a], o.Events[b])
	return err == nil && hb
}

// refChecker is the pairwise oracle; the plumbing it shares with Plan (placing
// buffers, arena bytes, naming the parties) is the checker's own.
type refChecker struct {
	*checker
	agg  map[violationKey]*Violation
	keys []violationKey
}

// referenceCheck is Plan as it was: pair by pair.
func referenceCheck(p *trace.Program, plan *trace.Plan) (*Report, error) {
	base, err := newChecker(p, plan)
	if err != nil {
		return nil, err
	}
	c := &refChecker{checker: base, agg: map[violationKey]*Violation{}}
	bufs := c.placeBuffers(plan, c.refGroupPieces)
	sort.Slice(bufs, func(i, j int) bool { return bufs[i].off < bufs[j].off })
	rep := &Report{Trace: p.Trace.Name}
	for i := range bufs {
		for j := i + 1; j < len(bufs) && bufs[j].off < bufs[i].end; j++ {
			rep.Pairs++
			c.refCheckPair(&bufs[i], &bufs[j])
		}
		if len(c.frame.Members(bufs[i].buf)) > 0 {
			rep.Pairs += c.refCheckGroup(&bufs[i])
		}
	}
	// The report's form (runs merged and cut, violations ordered) is finishReport's,
	// shared with Plan and tested on its own (TestFinishReport).
	vs := make([]*Violation, len(c.keys))
	for i, k := range c.keys {
		vs[i] = c.agg[k]
	}
	finishReport(rep, vs)
	return rep, nil
}

// refOrderRule returns the rule a use a of shared bytes by the owner letting
// them go first, and a use b by the next owner, break ("" for none): b's op
// must be a happens-before successor of a's, or a's op itself when it is
// inplace and the two uses map the bytes element for element.
func (c *refChecker) refOrderRule(a, b *placedUse) string {
	switch {
	case a.op == b.op:
		if !c.p.Ops[a.op].InPlace || !sameMap(a.layout, b.layout) {
			return ViolationSameOp
		}
	case !refHappensBefore(c.order, a.op, b.op):
		return ViolationUnordered
	}
	return ""
}

// refEmit records bytes y of a violation between use a (the earlier party) and use b.
func (c *refChecker) refEmit(rule string, a, b *placedUse, y *ranges.Set) {
	k := violationKey{rule, a.buf, a.op, a.use, b.buf, b.op, b.use}
	v, ok := c.agg[k]
	if !ok {
		v = c.newViolation(k)
		c.agg[k] = v
		c.keys = append(c.keys, k)
	}
	v.Bytes += y.Len()
	v.Ranges = append(v.Ranges, y.Runs()...)
}

func (c *refChecker) refCheckPair(a, b *placed) {
	p := c.p
	shared := ranges.FromRanges(ranges.Range{Lo: max(a.off, b.off), Hi: min(a.end, b.end)})
	for ia := range a.uses {
		ua := &a.uses[ia]
		xa := ranges.Intersect(&ua.set, &shared)
		if xa.IsEmpty() {
			continue
		}
		for ib := range b.uses {
			ub := &b.uses[ib]
			x := ranges.Intersect(&xa, &ub.set)
			if x.IsEmpty() {
				continue
			}
			for _, pa := range a.pieces {
				xp := ranges.Intersect(&x, &pa.Bytes)
				if xp.IsEmpty() {
					continue
				}
				for _, pb := range b.pieces {
					y := ranges.Intersect(&xp, &pb.Bytes)
					if y.IsEmpty() {
						continue
					}
					fu, su := ua, ub
					if pb.Step < pa.Step || (pb.Step == pa.Step && p.Buffers[b.buf].Step < p.Buffers[a.buf].Step) {
						fu, su = ub, ua
					}
					rule := ViolationHeld
					if pa.Step != trace.Never || pb.Step != trace.Never {
						rule = c.refOrderRule(fu, su)
					}
					if rule != "" {
						c.refEmit(rule, fu, su, &y)
					}
				}
			}
		}
	}
}

// The refChecker's side of placements: a host and the buffers placed over it form one group.

// refGroupPieces partitions the bytes of host h (at arena offset off) and of the buffers
// placed over it by the step that lets them go: each discard of a view of any of them, in
// step order, takes the bytes of its view not taken before; the rest go at the last
// release of the group, or never when any of them is held to the end. For a host with
// nothing placed over it these are its own death pieces.
func (c *refChecker) refGroupPieces(h int, off int64) []trace.Piece {
	p := c.p
	members := c.frame.Members(h)
	if len(members) == 0 {
		return refDeathPieces(p, h, off)
	}
	type discard struct {
		step int
		ref  trace.Ref
	}
	var ds []discard
	final := p.Buffers[h].Release
	for _, b := range append([]int{h}, members...) {
		for _, v := range p.Buffers[b].Discards {
			ds = append(ds, discard{p.Views[v].Discard, trace.Ref{Buffer: b, View: v}})
		}
		if rel := p.Buffers[b].Release; rel < 0 || final < 0 {
			final = -1
		} else {
			final = max(final, rel)
		}
	}
	slices.SortFunc(ds, func(a, b discard) int { return a.step - b.step })
	rest := ranges.FromRanges(ranges.Range{Lo: off, Hi: off + p.Buffers[h].Size})
	var out []trace.Piece
	for _, d := range ds {
		fp, _ := c.frame.Footprint(d.ref)
		_ = fp.Translate(off)
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		out = append(out, trace.Piece{Bytes: got, Step: d.step})
	}
	if !rest.IsEmpty() {
		death := trace.Never
		if final >= 0 {
			death = final
		}
		out = append(out, trace.Piece{Bytes: rest, Step: death})
	}
	return out
}

// refOwner is one buffer of a group as the group check sees it.
type refOwner struct {
	buf   int
	uses  []*placedUse // its uses, in op order
	cover ranges.Set   // its arena bytes
	held  ranges.Set   // its arena bytes it holds to the end of the trace
}

// refCheckGroup reports every violation among the buffers of group g (a host with buffers
// placed over it) and returns how many pairs of them share bytes. The host goes first,
// then the placed buffers by first op (then by allocation): every op using a byte through
// an earlier buffer must happen-before every op using it through a later one, except one
// inplace op putting element i over element i, and bytes an earlier buffer holds to the
// end may not be used through a later one.
//
// It orders the buffers first, looking up each one's first op in g's uses, then gathers
// each buffer's uses by filtering g's uses.
func (c *refChecker) refCheckGroup(g *placed) int {
	p := c.p
	firstOp := func(b int) int {
		for _, u := range g.uses {
			if u.buf == b {
				return u.op
			}
		}
		return len(p.Ops)
	}
	placedOver := slices.Clone(c.frame.Members(g.buf))
	sort.SliceStable(placedOver, func(i, j int) bool {
		a, b := placedOver[i], placedOver[j]
		if fa, fb := firstOp(a), firstOp(b); fa != fb {
			return fa < fb
		}
		return p.Buffers[a].Step < p.Buffers[b].Step
	})
	var owners []refOwner
	for _, b := range append([]int{g.buf}, placedOver...) {
		o := refOwner{buf: b}
		for i := range g.uses {
			if g.uses[i].buf == b {
				o.uses = append(o.uses, &g.uses[i])
			}
		}
		o.cover, _ = c.arena(trace.Ref{Buffer: b, View: -1}, g.off)
		if p.Buffers[b].Release < 0 {
			o.held = o.cover.Clone()
			for _, v := range p.Buffers[b].Discards {
				fp, _ := c.arena(trace.Ref{Buffer: b, View: v}, g.off)
				o.held.RemoveSet(&fp)
			}
		}
		owners = append(owners, o)
	}
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
							c.refEmit(ViolationTakenOver, ux, uy, &h)
							s.RemoveSet(&x.held)
							if s.IsEmpty() {
								continue
							}
						}
					}
					if rule := c.refOrderRule(ux, uy); rule != "" {
						c.refEmit(rule, ux, uy, &s)
					}
				}
			}
		}
	}
	return pairs
}

// refDeathPieces partitions buffer b's bytes (placed at off) by the step that lets them go:
// each discard takes the bytes of its view not discarded before; the rest go at the
// buffer's release, or never.
func refDeathPieces(p *trace.Program, b int, off int64) []trace.Piece {
	buf := &p.Buffers[b]
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
	var out []trace.Piece
	for _, v := range buf.Discards {
		fp, _ := p.Footprint(trace.Ref{Buffer: b, View: v})
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		_ = got.Translate(off)
		out = append(out, trace.Piece{Bytes: got, Step: p.Views[v].Discard})
	}
	if !rest.IsEmpty() {
		death := trace.Never
		if buf.Release >= 0 {
			death = buf.Release
		}
		_ = rest.Translate(off)
		out = append(out, trace.Piece{Bytes: rest, Step: death})
	}
	return out
}
