package plan

import "slices"

// normalizePieces rewrites pieces as disjoint rectangles in run form: at
// every time, the pieces live are exactly the maximal runs of the union of
// the byte ranges live then, and a piece lasts as long as its run stays the
// same. So every piece starts and ends where the item's live bytes change,
// the times the solver's sections are cut at. It sweeps the pieces' starts
// and ends over a count of the pieces covering each elementary byte range,
// and at each time rebuilds only the runs around the bytes that changed:
// O((P + R) log P) for P pieces and R pieces out.
// It also returns the pieces by first byte, and by last byte descending,
// when it has them at no cost (else nil).
func normalizePieces(in []Piece) (pieces, byLo, byHi []Piece) {
	if len(in) <= 1 {
		return in[:len(in):len(in)], nil, nil // read only: shared with the problem
	}
	if out, byLo, byHi, ok := normalizeDisjoint(in); ok {
		return out, byLo, byHi
	}
	return normalizeCover(in), nil, nil
}

// normalizeCover is normalizePieces on the cover tree, for any pieces.
func normalizeCover(in []Piece) []Piece {
	xs := make([]int64, 0, 2*len(in))
	for _, pc := range in {
		xs = append(xs, pc.Lo, pc.Hi)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	m := len(xs) - 1 // elementary ranges [xs[k], xs[k+1])
	ix := func(x int64) int32 {
		k, _ := slices.BinarySearch(xs, x)
		return int32(k)
	}
	type event struct {
		t      Time
		lo, hi int32
		d      int32
	}
	evs := make([]event, 0, 2*len(in))
	for _, pc := range in {
		lo, hi := ix(pc.Lo), ix(pc.Hi)
		evs = append(evs, event{pc.Start, lo, hi, 1}, event{pc.End, lo, hi, -1})
	}
	slices.SortFunc(evs, func(a, b event) int { return a.t - b.t })
	cov := newCoverTree(m)
	open := map[int32]int{} // first elementary range of an open run -> its piece in out
	var (
		out      []Piece
		old, cur [][2]int32
		query    [][2]int32 // the ranges the changes of one time touch, merged
	)
	for i := 0; i < len(evs); {
		t := evs[i].t
		j := i
		for j < len(evs) && evs[j].t == t {
			j++
		}
		batch := evs[i:j]
		i = j
		// The runs a change can touch: those meeting its range or adjacent to
		// it. The changes' ranges are merged first, so that many changes at
		// one time over adjacent bytes (the rows of a tensor let go
		// together) ask the tree once.
		query = query[:0]
		for _, e := range batch {
			query = append(query, [2]int32{max(e.lo-1, 0), min(e.hi+1, int32(m))})
		}
		slices.SortFunc(query, func(a, b [2]int32) int { return int(a[0] - b[0]) })
		merged := query[:0]
		for _, q := range query {
			if n := len(merged); n > 0 && q[0] <= merged[n-1][1] {
				merged[n-1][1] = max(merged[n-1][1], q[1])
			} else {
				merged = append(merged, q)
			}
		}
		query = merged
		runs := func(dst [][2]int32) [][2]int32 {
			for _, q := range query {
				dst = cov.runs(dst, q[0], q[1])
			}
			slices.SortFunc(dst, func(a, b [2]int32) int { return int(a[0] - b[0]) })
			return slices.Compact(dst)
		}
		old = runs(old[:0])
		for _, e := range batch {
			cov.addRange(e.lo, e.hi, e.d)
		}
		cur = runs(cur[:0])
		diffRuns(old, cur, func(r [2]int32) {
			out[open[r[0]]].End = t
			delete(open, r[0])
		}, func(r [2]int32) {
			open[r[0]] = len(out)
			out = append(out, Piece{Lo: xs[r[0]], Hi: xs[r[1]], Start: t})
		})
	}
	return out
}

// diffRuns walks the runs [first, last] live before a time (old) and at it
// (cur), both sorted by first element: a run in old only ends at the time
// (end), a run in cur only starts there (start), a run in both goes on,
// and a run of old and one of cur with the same first element but another
// last end and start.
func diffRuns(old, cur [][2]int32, end, start func(r [2]int32)) {
	a, b := 0, 0
	for a < len(old) || b < len(cur) {
		switch {
		case b == len(cur) || (a < len(old) && old[a][0] < cur[b][0]):
			end(old[a])
			a++
		case a == len(old) || cur[b][0] < old[a][0]:
			start(cur[b])
			b++
		case old[a] == cur[b]:
			a, b = a+1, b+1 // the same run goes on
		default:
			end(old[a])
			start(cur[b])
			a, b = a+1, b+1
		}
	}
}

// maxDisjointTimes bounds the distinct start and end times for which
// normalizeDisjoint rebuilds every run at each of them.
const maxDisjointTimes = 64

// normalizeDisjoint is normalizePieces for pieces whose byte ranges are
// pairwise disjoint (derive cuts an item into elementary segments, so its
// pieces are) and that start and end at few distinct times (an item whose
// strided views die at a few ops): the runs live at a time are then the
// chains of byte-adjacent pieces live then, rebuilt at each of the T times
// in O(P), O(P log P + T·P) in all. It gives normalizePieces' answer, in
// its order, and the same pieces by first byte and by last byte,
// descending; it reports false, doing nothing, when the pieces overlap in
// bytes or start and end at more than maxDisjointTimes times.
func normalizeDisjoint(in []Piece) (out, byLo, byHi []Piece, ok bool) {
	ps := in // derive's pieces come in byte order: read as they are
	if !slices.IsSortedFunc(ps, cmpPieceLo) {
		ps = slices.Clone(in)
		slices.SortFunc(ps, cmpPieceLo)
	}
	for k := 0; k+1 < len(ps); k++ {
		if ps[k].Hi > ps[k+1].Lo {
			return nil, nil, nil, false
		}
	}
	var timesArr [maxDisjointTimes]Time
	times := timesArr[:0] // the distinct starts and ends, found by a linear search in so few
	for _, pc := range ps {
		for _, t := range [2]Time{pc.Start, pc.End} {
			if !slices.Contains(times, t) {
				if len(times) == maxDisjointTimes {
					return nil, nil, nil, false
				}
				times = append(times, t)
			}
		}
	}
	slices.Sort(times)
	var (
		open     []int      // per piece: the piece of out of the run starting with it
		first    []int32    // per piece of out: the first piece of its run
		last     []int32    // per piece of out: the last piece of its run
		old, cur [][2]int32 // runs of pieces [first, last] live before and at a time
	)
	open = make([]int, len(ps))
	// Pieces out: as many as in, as a rule (a run per piece at worst, and
	// runs end as others start); the three orders in one array.
	all := make([]Piece, 0, 3*len(ps))
	out, first, last = all[:0:len(ps)], make([]int32, 0, len(ps)), make([]int32, 0, len(ps))
	cur, old = make([][2]int32, 0, len(ps)), make([][2]int32, 0, len(ps))
	for _, t := range times {
		cur = cur[:0]
		for k := 0; k < len(ps); k++ {
			if ps[k].Start > t || ps[k].End <= t {
				continue
			}
			k0 := k
			for k+1 < len(ps) && ps[k+1].Lo == ps[k].Hi && ps[k+1].Start <= t && t < ps[k+1].End {
				k++
			}
			cur = append(cur, [2]int32{int32(k0), int32(k)})
		}
		diffRuns(old, cur, func(r [2]int32) {
			out[open[r[0]]].End = t
		}, func(r [2]int32) {
			open[r[0]] = len(out)
			out = append(out, Piece{Lo: ps[r[0]].Lo, Hi: ps[r[1]].Hi, Start: t})
			first, last = append(first, r[0]), append(last, r[1])
		})
		old, cur = cur, old
	}
	// By first byte: runs with the same first piece start at the same
	// byte, so a counting sort on it orders them; by last byte, the same on
	// the last piece, taken from the highest.
	n := len(out)
	if n <= len(ps) {
		byLo, byHi = all[len(ps):len(ps)+n:len(ps)+n], all[2*len(ps):2*len(ps)+n:2*len(ps)+n]
	} else {
		byLo, byHi = make([]Piece, n), make([]Piece, n)
	}
	at := make([]int, len(ps)+1)
	countingSort(byLo, out, first, at, false)
	countingSort(byHi, out, last, at, true)
	return out, byLo, byHi, true
}

// countingSort writes pieces to dst ordered by key (a piece index below
// len(at)-1), ascending or descending, ties in their order; at is scratch.
func countingSort(dst, pieces []Piece, key []int32, at []int, descending bool) {
	clear(at)
	m := int32(len(at) - 1)
	slot := func(k int32) int32 {
		if descending {
			return m - 1 - k
		}
		return k
	}
	for _, k := range key {
		at[slot(k)+1]++
	}
	for k := range m {
		at[k+1] += at[k]
	}
	for j, k := range key {
		dst[at[slot(k)]] = pieces[j]
		at[slot(k)]++
	}
}

// coverTree counts, per elementary range 0..m-1, the pieces covering it: a
// segment tree with range adds, the least and the largest count below each
// node, and searches for the next covered or uncovered range, O(log m) each.
type coverTree struct {
	m, size     int
	add, mn, mx []int32 // per node: its own pending add; min and max below it, its add included
}

func newCoverTree(m int) *coverTree {
	size := 1
	for size < m {
		size <<= 1
	}
	return &coverTree{m: m, size: size, add: make([]int32, 2*size), mn: make([]int32, 2*size), mx: make([]int32, 2*size)}
}

// addRange adds d to the counts of ranges [l, h).
func (t *coverTree) addRange(l, h, d int32) { t.update(1, 0, int32(t.size), l, h, d) }

func (t *coverTree) update(v, lo, hi, l, h, d int32) {
	if h <= lo || hi <= l {
		return
	}
	if l <= lo && hi <= h {
		t.add[v] += d
		t.mn[v] += d
		t.mx[v] += d
		return
	}
	mid := (lo + hi) / 2
	t.update(2*v, lo, mid, l, h, d)
	t.update(2*v+1, mid, hi, l, h, d)
	t.mn[v] = t.add[v] + min(t.mn[2*v], t.mn[2*v+1])
	t.mx[v] = t.add[v] + max(t.mx[2*v], t.mx[2*v+1])
}

// next returns the first range at or after i that is covered (covered) or
// not (!covered), or m if there is none.
func (t *coverTree) next(i int32, covered bool) int32 {
	if r := t.find(1, 0, int32(t.size), i, 0, covered); r >= 0 && r < int32(t.m) {
		return r
	}
	return int32(t.m)
}

func (t *coverTree) find(v, lo, hi, i, acc int32, covered bool) int32 {
	if hi <= i || (covered && acc+t.mx[v] <= 0) || (!covered && acc+t.mn[v] > 0) {
		return -1
	}
	if hi-lo == 1 {
		return lo
	}
	mid := (lo + hi) / 2
	acc += t.add[v]
	if r := t.find(2*v, lo, mid, i, acc, covered); r >= 0 {
		return r
	}
	return t.find(2*v+1, mid, hi, i, acc, covered)
}

// lastUncovered returns the last range at or before i that no piece covers,
// or -1.
func (t *coverTree) lastUncovered(i int32) int32 { return t.findLast(1, 0, int32(t.size), i, 0) }

func (t *coverTree) findLast(v, lo, hi, i, acc int32) int32 {
	if lo > i || acc+t.mn[v] > 0 {
		return -1
	}
	if hi-lo == 1 {
		return lo
	}
	mid := (lo + hi) / 2
	acc += t.add[v]
	if r := t.findLast(2*v+1, mid, hi, i, acc); r >= 0 {
		return r
	}
	return t.findLast(2*v, lo, mid, i, acc)
}

// runs appends the maximal covered runs [first, end) of ranges that meet
// ranges [l, h).
func (t *coverTree) runs(dst [][2]int32, l, h int32) [][2]int32 {
	if l >= h {
		return dst
	}
	s := t.lastUncovered(l) + 1 // l's run starts there when l is covered
	if s > l {
		s = t.next(l, true)
	}
	for s < h && s < int32(t.m) {
		e := t.next(s, false)
		dst = append(dst, [2]int32{s, e})
		s = t.next(e, true)
	}
	return dst
}
