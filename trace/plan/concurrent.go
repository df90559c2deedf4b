package plan

import (
	"cmp"
	"slices"
	"sort"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// concurrentPairsByClock returns what concurrentPairs returns for happens-before given by
// order, in the same order, without visiting every pair of pieces.
//
// Pieces a and b with a's window ending no later than b's starts are ordered when every
// last op x of a happens-before every first op y of b: x != y and seq(x) <= Seen(y,
// engine(x)). With thr_b[e] the least Seen(y, e) over b's first ops, a is unordered before
// b exactly when some last op x of a has seq(x) > thr_b[engine(x)], or is itself a first
// op of b. The sweep takes the pieces by window start as the later one of a pair, after
// adding to one max-heap per engine, keyed by seq, the last ops of every piece whose
// window has ended by then; the pieces a heap holds above b's threshold are exactly the
// earlier ones unordered before b on that engine, and the heap visits them without
// looking further. The cost is O(P log P + R) for R pairs reported, plus the ops shared
// by a last and a first list.
func concurrentPairsByClock(prob *Problem, infos []pieceInfo, order *trace.Order) []PiecePair {
	n := len(infos)
	if n == 0 {
		return nil
	}
	nEng := len(infos[0].firstOn)
	window := func(i int) Piece { return prob.Items[infos[i].item].Pieces[infos[i].piece] }
	byStart := make([]int32, n)
	byEnd := make([]int32, n)
	for i := range n {
		byStart[i], byEnd[i] = int32(i), int32(i)
	}
	slices.SortFunc(byStart, func(a, b int32) int { return cmp.Compare(window(int(a)).Start, window(int(b)).Start) })
	slices.SortFunc(byEnd, func(a, b int32) int { return cmp.Compare(window(int(a)).End, window(int(b)).End) })

	var pairs [][2]int32
	report := func(a, b int32) { // a's window ends before b's starts: unordered
		if infos[a].item != infos[b].item {
			pairs = append(pairs, [2]int32{min(a, b), max(a, b)})
		}
	}
	heaps := make([]sweep.Heap[seqEntry], nEng)
	for e := range heaps {
		heaps[e] = sweep.NewHeap(func(x, y seqEntry) bool { return x.seq > y.seq }) // highest seq first
	}
	stamp := make([]int32, n)
	for i := range stamp {
		stamp[i] = -1
	}
	thr := make([]uint64, nEng)
	next := 0
	for _, b := range byStart {
		wb := window(int(b))
		for ; next < n && window(int(byEnd[next])).End <= wb.Start; next++ {
			a := byEnd[next]
			for _, x := range infos[a].lastOn {
				if x >= 0 {
					ev := order.Events[x]
					heaps[ev.Engine].Push(seqEntry{uint64(ev.Seq), a})
				}
			}
		}
		has := false
		for e := range thr {
			thr[e] = ^uint64(0)
		}
		for _, y := range infos[b].firstOn {
			if y < 0 {
				continue
			}
			has = true
			for e := range thr {
				thr[e] = min(thr[e], uint64(order.Seen(y, e)))
			}
		}
		if !has {
			continue // no first op: ordered after everything
		}
		for e := range heaps {
			t := thr[e]
			heaps[e].VisitWhile(func(x seqEntry) bool { return x.seq > t }, func(x seqEntry) {
				if stamp[x.piece] != b {
					stamp[x.piece] = b
					report(x.piece, b)
				}
			})
		}
	}
	// An op that is a last op of a and a first op of b never happens-before itself. The
	// pieces with last op x, by window end: those ending by b's start are a prefix.
	lastOf := map[int][]int32{}
	for _, i := range byEnd {
		for _, x := range infos[i].lastOn {
			if x >= 0 {
				lastOf[x] = append(lastOf[x], i)
			}
		}
	}
	for b := range infos {
		wb := window(b)
		for _, y := range infos[b].firstOn {
			if y < 0 {
				continue
			}
			as := lastOf[y]
			n := sort.Search(len(as), func(i int) bool { return window(int(as[i])).End > wb.Start })
			for _, a := range as[:n] {
				report(a, int32(b))
			}
		}
	}
	slices.SortFunc(pairs, func(p, q [2]int32) int {
		if c := cmp.Compare(p[0], q[0]); c != 0 {
			return c
		}
		return cmp.Compare(p[1], q[1])
	})
	pairs = slices.Compact(pairs)
	out := make([]PiecePair, len(pairs))
	for i, pr := range pairs {
		a, b := infos[pr[0]], infos[pr[1]]
		out[i] = PiecePair{A: PieceRef{a.item, a.piece}, B: PieceRef{b.item, b.piece}}
	}
	return out
}

// seqEntry is a piece keyed by the seq of one of its last ops.
type seqEntry struct {
	seq   uint64
	piece int32
}

// concurrent lists the pieces of different items whose windows are disjoint
// but whose uses are not ordered by happens-before (concurrentPairsByClock on
// the program's Order, built here when the planner did not hand it over).
func (ip *inplacer) concurrent(prob *Problem, infos []pieceInfo) []PiecePair {
	if ip.order == nil {
		if o, err := trace.NewOrder(ip.p); err == nil {
			ip.order = o
		} else {
			return concurrentPairs(prob, infos, ip.hb) // no Order for this program: pair by pair
		}
	}
	return concurrentPairsByClock(prob, infos, ip.order)
}

// concurrentPairs is concurrent pair by pair: O(P²) happens-before queries.
func concurrentPairs(prob *Problem, infos []pieceInfo, hb func(a, b int) bool) []PiecePair {
	ordered := func(a, b int) bool { // every use of piece a happens-before every use of piece b
		for _, x := range infos[a].lastOn {
			if x < 0 {
				continue
			}
			for _, y := range infos[b].firstOn {
				if y >= 0 && !hb(x, y) {
					return false
				}
			}
		}
		return true
	}
	var out []PiecePair
	for a := range infos {
		pa := prob.Items[infos[a].item].Pieces[infos[a].piece]
		for b := a + 1; b < len(infos); b++ {
			if infos[a].item == infos[b].item {
				continue
			}
			pb := prob.Items[infos[b].item].Pieces[infos[b].piece]
			var ok bool
			switch {
			case pa.End <= pb.Start:
				ok = ordered(a, b)
			case pb.End <= pa.Start:
				ok = ordered(b, a)
			default:
				continue // the windows intersect: a conflict already
			}
			if !ok {
				out = append(out, PiecePair{A: PieceRef{infos[a].item, infos[a].piece}, B: PieceRef{infos[b].item, infos[b].piece}})
			}
		}
	}
	return out
}
