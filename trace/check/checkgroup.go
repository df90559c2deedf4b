package check

import (
	"cmp"
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
)

// The checker's side of placements: a host and the buffers placed over it form one group.

// sameMap reports whether two arena layouts put element i over element i.
func sameMap(a, b strided.Layout) bool {
	return strided.SameElements(a, 0, b, 0)
}

// groupPieces partitions the bytes of host h (at arena offset off) and of the buffers
// placed over it by the step that lets them go (trace.Program.LetGoGroup). For a host
// with nothing placed over it these are its own pieces (trace.Program.LetGo).
func (c *checker) groupPieces(h int, off int64) []trace.Piece {
	p := c.p
	members := c.frame.Members(h)
	if len(members) == 0 {
		return p.LetGo(h, off)
	}
	group := append([]int{h}, members...)
	return p.LetGoGroup(group, off, func(r trace.Ref) ranges.Set {
		set, _ := c.frame.Footprint(r)
		return set
	})
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
// placed over it, at position gpos of Plan's sorted list) and returns how many pairs of
// them share bytes. The host goes first, then the placed buffers by first op (then by
// allocation): every op using a byte through an earlier buffer must happen-before every
// op using it through a later one, except one inplace op putting element i over element
// i, and bytes an earlier buffer holds to the end may not be used through a later one.
//
// Like the sweep between groups, it visits the buffers in that order and checks each use
// against an index of the uses before it: the bytes an earlier buffer holds to the end in
// a class that reports every use, the others by engine and seq.
func (c *checker) checkGroup(gpos int, g *placed) int {
	p := c.p
	bufs := append([]int{g.buf}, c.frame.Members(g.buf)...)
	owners := make([]owner, len(bufs))
	at := make(map[int]int, len(bufs))
	for i, b := range bufs {
		at[b] = i
		o := &owners[i]
		o.buf, o.first = b, len(p.Ops)
		o.cover, _ = c.arena(trace.Ref{Buffer: b, View: -1}, g.off)
		if p.Buffers[b].Release < 0 {
			var gone []ranges.Range
			for _, v := range p.Buffers[b].Discards {
				fp, _ := c.arena(trace.Ref{Buffer: b, View: v}, g.off)
				gone = append(gone, fp.Runs()...)
			}
			discarded := ranges.FromRanges(gone...)
			o.held = ranges.Subtract(&o.cover, &discarded)
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
	covers := make([]*ranges.Set, len(owners))
	for i := range owners {
		covers[i] = &owners[i].cover
	}
	pairs := countMeeting(covers)

	// The bytes each use reaches, split by whether its owner holds them to the end.
	type part struct {
		owner, u int
		set      ranges.Set
		held     bool
	}
	var parts []part
	var coords []int64
	for i := range owners {
		o := &owners[i]
		for u, pu := range o.uses {
			for _, r := range pu.set.Runs() {
				coords = append(coords, r.Lo, r.Hi)
			}
			if o.held.IsEmpty() {
				parts = append(parts, part{owner: i, u: u, set: pu.set})
				continue
			}
			if h := ranges.Intersect(&pu.set, &o.held); !h.IsEmpty() {
				parts = append(parts, part{owner: i, u: u, set: h, held: true})
				for _, r := range h.Runs() {
					coords = append(coords, r.Lo, r.Hi)
				}
			}
			if rest := ranges.Subtract(&pu.set, &o.held); !rest.IsEmpty() {
				parts = append(parts, part{owner: i, u: u, set: rest})
				for _, r := range rest.Runs() {
					coords = append(coords, r.Lo, r.Hi)
				}
			}
		}
	}
	if len(parts) == 0 {
		return pairs
	}
	ne := len(p.Trace.Engines)
	held := ne
	ix := newUseIndex(compactCoords(coords), ne+1)
	q := newQuerier(len(parts), len(c.p.Trace.Engines))
	next := 0 // parts[:next] are in the index
	for i := range owners {
		y := &owners[i]
		first := next
		for first < len(parts) && parts[first].owner < i {
			first++
		}
		for ; next < first; next++ {
			pt := &parts[next]
			k := owners[pt.owner].uses[pt.u].op
			if pt.held {
				ix.insert(held, 1, int32(next), &pt.set)
			} else {
				ix.insert(p.Ops[k].Engine, uint64(c.order.Events[k].Seq), int32(next), &pt.set)
			}
		}
		for yu, uy := range y.uses {
			for _, id := range q.ask(ix, c.order, uy.op, true, held, &uy.set) {
				e := &parts[id]
				ux := owners[e.owner].uses[e.u]
				s := meet(&e.set, &uy.set)
				if s.IsEmpty() {
					continue
				}
				pos := enumPos{gpos, 1, e.owner, i, e.u, yu, 1}
				var rule string
				switch {
				case e.held:
					rule, pos[6] = ViolationTakenOver, 0
				case ux.op == uy.op:
					rule = c.sameOpRule(ux, uy)
				default:
					rule = ViolationUnordered
				}
				if rule != "" {
					c.emit(rule, ux, uy, &s, pos)
				}
			}
		}
	}
	return pairs
}

// countMeeting returns the number of pairs of sets that share a byte.
func countMeeting(sets []*ranges.Set) int {
	single := true
	for _, s := range sets {
		single = single && s.NumRuns() <= 1
	}
	n := 0
	if single {
		var rs []ranges.Range
		for _, s := range sets {
			if !s.IsEmpty() {
				rs = append(rs, s.Bounds())
			}
		}
		slices.SortFunc(rs, func(a, b ranges.Range) int { return cmp.Compare(a.Lo, b.Lo) })
		for i, r := range rs {
			n += sort.Search(len(rs)-i-1, func(k int) bool { return rs[i+1+k].Lo >= r.Hi })
		}
		return n
	}
	type run struct {
		r   ranges.Range
		set int
	}
	var runs []run
	for i, s := range sets {
		for _, r := range s.Runs() {
			runs = append(runs, run{r, i})
		}
	}
	slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.r.Lo, b.r.Lo) })
	seen := map[[2]int]bool{}
	var active []run
	for _, x := range runs {
		keep := active[:0]
		for _, a := range active {
			if a.r.Hi > x.r.Lo {
				keep = append(keep, a)
			}
		}
		active = keep
		for _, a := range active {
			if a.set != x.set {
				seen[[2]int{min(a.set, x.set), max(a.set, x.set)}] = true
			}
		}
		active = append(active, x)
	}
	return len(seen)
}
