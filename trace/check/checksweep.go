package check

import (
	"cmp"
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// The checker's sweep over the placed buffers (groups). For a byte x shared by groups A
// and B whose pieces let x go first in A (by death step, then by allocation), every use of
// x through A must happen-before every use of x through B. So order all pieces of all
// groups by (death, allocation step of the group's host): at every byte, the groups
// holding it come in the order in which the rule pairs them. Visiting the pieces in that
// order, every use reaching a piece's bytes is checked against the uses of the pieces
// visited before it that reach the same bytes, and then joins them. Op a happens-before
// op b exactly when a != b and a's seq on its engine is at most what b has seen of that
// engine (trace.Order.Seen), so the earlier uses that break the rule for a later op are those
// whose seq exceeds a threshold per engine: the useIndex finds exactly them, and a plan
// without violations costs O(R log R) for R runs of use footprints, whatever the number
// of buffers sharing each byte.
//
// Two pieces held to the end (death never) may not share used bytes at all: their uses
// go to a class of their own, which reports every earlier one. An op using the bytes
// through both groups has seq equal to its own clock component, and is found by asking
// its own engine for seqs from its own on.

// fragment is the bytes one use of a group reaches within one piece of the group.
type fragment struct {
	g     int // the group's position in Plan's sorted list
	u     int // the use's index in the group's uses
	piece int // the piece's index in the group's pieces
	set   ranges.Set
}

// partRun is one run of a group's piece partition.
type partRun = sweep.PartRun

// splitByPieces appends to out the fragments of set (a use's bytes) within each piece of
// the partition part (runs sorted by Lo), in piece order.
func splitByPieces(out []fragment, g, u int, set *ranges.Set, part []partRun, scratch []partRun) ([]fragment, []partRun) {
	tmp := scratch[:0]
	for _, r := range set.Runs() {
		i := sort.Search(len(part), func(i int) bool { return part[i].R.Hi > r.Lo })
		for ; i < len(part) && part[i].R.Lo < r.Hi; i++ {
			if x := part[i].R.Intersect(r); !x.Empty() {
				tmp = append(tmp, partRun{R: x, Piece: part[i].Piece})
			}
		}
	}
	slices.SortStableFunc(tmp, func(a, b partRun) int { return cmp.Compare(a.Piece, b.Piece) })
	for i := 0; i < len(tmp); {
		j := i
		runs := make([]ranges.Range, 0, 1)
		for ; j < len(tmp) && tmp[j].Piece == tmp[i].Piece; j++ {
			runs = append(runs, tmp[j].R)
		}
		out = append(out, fragment{g: g, u: u, piece: tmp[i].Piece, set: ranges.FromRanges(runs...)})
		i = j
	}
	return out, tmp
}

// partition returns the runs of pieces, sorted by Lo.
func partition(pieces []trace.Piece) []partRun {
	return sweep.PartRuns(len(pieces), func(i int) *ranges.Set { return &pieces[i].Bytes })
}

// meet returns a ∩ b, looking at b only within a's bounds (and the other way round).
func meet(a, b *ranges.Set) ranges.Set {
	if a.NumRuns() > b.NumRuns() {
		a, b = b, a
	}
	if a.IsEmpty() {
		return ranges.Set{}
	}
	bd := a.Bounds()
	br := b.Runs()
	lo := sort.Search(len(br), func(i int) bool { return br[i].Hi > bd.Lo })
	hi := sort.Search(len(br), func(i int) bool { return br[i].Lo >= bd.Hi })
	if lo >= hi {
		return ranges.Set{}
	}
	if hi-lo < len(br) {
		sub := ranges.FromRanges(br[lo:hi]...)
		return ranges.Intersect(a, &sub)
	}
	return ranges.Intersect(a, b)
}

// sweep reports every violation between groups (Plan's rule for two buffers with
// offsets).
func (c *checker) sweep(bufs []placed) {
	p := c.p
	var (
		frags   []fragment
		scratch []partRun
	)
	for g := range bufs {
		part := partition(bufs[g].pieces)
		for u := range bufs[g].uses {
			frags, scratch = splitByPieces(frags, g, u, &bufs[g].uses[u].set, part, scratch)
		}
	}
	if len(frags) == 0 {
		return
	}
	// Visit order: the piece's death, then the allocation of the group's host; the
	// fragments of one piece form one unit.
	order := make([]int32, len(frags))
	for i := range order {
		order[i] = int32(i)
	}
	unitKey := func(f *fragment) (int, int, int, int) {
		return bufs[f.g].pieces[f.piece].Step, p.Buffers[bufs[f.g].buf].Step, f.g, f.piece
	}
	slices.SortFunc(order, func(x, y int32) int {
		a, b := &frags[x], &frags[y]
		ad, as, ag, ap := unitKey(a)
		bd, bs, bg, bp := unitKey(b)
		if r := cmp.Compare(ad, bd); r != 0 {
			return r
		}
		if r := cmp.Compare(as, bs); r != 0 {
			return r
		}
		if r := cmp.Compare(ag, bg); r != 0 {
			return r
		}
		if r := cmp.Compare(ap, bp); r != 0 {
			return r
		}
		return cmp.Compare(x, y)
	})
	coords := make([]int64, 0, 2*len(frags))
	for i := range frags {
		for _, r := range frags[i].set.Runs() {
			coords = append(coords, r.Lo, r.Hi)
		}
	}
	ne := len(p.Trace.Engines)
	held := ne // the class of uses of pieces held to the end
	ix := newUseIndex(compactCoords(coords), ne+1)
	q := newQuerier(len(frags), len(c.p.Trace.Engines))
	use := func(f *fragment) *placedUse { return &bufs[f.g].uses[f.u] }
	for i := 0; i < len(order); {
		j := i
		fi := &frags[order[i]]
		for j < len(order) && frags[order[j]].g == fi.g && frags[order[j]].piece == fi.piece {
			j++
		}
		heldToEnd := bufs[fi.g].pieces[fi.piece].Step == trace.Never
		for _, id := range order[i:j] {
			f := &frags[id]
			b := use(f)
			cands := q.ask(ix, c.order, b.op, heldToEnd, held, &f.set)
			for _, eid := range cands {
				e := &frags[eid]
				a := use(e)
				y := meet(&e.set, &f.set)
				if y.IsEmpty() {
					continue
				}
				var rule string
				switch {
				case heldToEnd && bufs[e.g].pieces[e.piece].Step == trace.Never:
					rule = ViolationHeld
				case a.op == b.op:
					rule = c.sameOpRule(a, b)
				default:
					rule = ViolationUnordered
				}
				if rule == "" {
					continue
				}
				pos := enumPos{e.g, 0, f.g, e.u, f.u, e.piece, f.piece}
				if f.g < e.g {
					pos = enumPos{f.g, 0, e.g, f.u, e.u, f.piece, e.piece}
				}
				c.emit(rule, a, b, &y, pos)
			}
		}
		for _, id := range order[i:j] {
			f := &frags[id]
			k := use(f).op
			if heldToEnd {
				ix.insert(held, 1, id, &f.set)
			} else {
				ix.insert(p.Ops[k].Engine, uint64(c.order.Events[k].Seq), id, &f.set)
			}
		}
		i = j
	}
}

// querier collects the distinct entries a query of a useIndex reports.
type querier struct {
	engines int // the trace's engines: the classes of the useIndex below the all class
	stamp   []int32
	n       int32
	out     []int32
}

func newQuerier(n, engines int) *querier {
	return &querier{engines: engines, stamp: make([]int32, n)}
}

// ask returns the entries of ix that break the ordering rule for a later use of op k
// reaching set: on every engine, the uses op k is not ordered after, and op k's own uses;
// with all too, every entry of class all.
func (q *querier) ask(ix *useIndex, o *trace.Order, k int, all bool, allClass int, set *ranges.Set) []int32 {
	q.n++
	q.out = q.out[:0]
	visit := func(id int32) {
		if q.stamp[id] != q.n {
			q.stamp[id] = q.n
			q.out = append(q.out, id)
		}
	}
	if all {
		ix.query(allClass, 0, set, visit)
	}
	own := o.Events[k].Engine
	for e := range q.engines {
		above := uint64(o.Seen(k, e))
		if e == int(own) {
			above-- // op k itself: its seq is its own clock component
		}
		ix.query(e, above, set, visit)
	}
	slices.Sort(q.out)
	return q.out
}
