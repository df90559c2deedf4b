package plan

import (
	"fmt"
	"slices"
)

// rel is a forbidden half-open interval [lo, hi) of relative offsets
// x_self - x_other between two items that conflict.
type rel struct{ lo, hi int64 }

// edge records that an item conflicts with item other: placing other at b
// forbids the item every offset in [b+r.lo, b+r.hi) for r in rels. rels are
// sorted and pairwise disjoint (touching intervals are merged).
type edge struct {
	other int32
	// solid marks the classic whole-buffer case, the single interval
	// [-size_self+1, size_other): once other sits at b and the item is to be
	// placed at or above b, it must sit at or above b+size_other.
	solid bool
	rels  []rel
}

// span says an item has bytes live in sections [s0, s1): bytes of them in
// each, the first run0 of which form one run starting at the item's byte 0.
type span struct {
	s0, s1 int32
	bytes  int64
	run0   int64
}

// compiled is the solver's view of a problem: time compressed into
// sections, each item's normalized occupancy per section, and the conflict
// graph with forbidden relative offsets. It is immutable once built.
//
// Invariants: sections are [times[k], times[k+1]); every span lies inside
// [0, nsec); extent[i] = [first section, one past last section) of item i
// (empty items have first == last == 0); edges are symmetric: i lists j
// iff j lists i, with negated intervals.
type compiled struct {
	n      int
	align  int64
	grain  int64 // every offset a canonical search produces is a multiple of grain
	size   []int64
	pieces [][]Piece // normalized: pieces of one item never overlap in time and bytes
	spans  [][]span
	edges  [][]edge
	times  []Time
	nsec   int
	extent [][2]int32 // live sections of each item (hull)
	// cutExtent widens extent to the hull of every concurrent partner, so
	// that no conflict crosses a section boundary no cut extent spans.
	cutExtent [][2]int32
	secItems  [][]int32 // items with live bytes in each section
	// byLo and byHi hold, per item, its pieces by first byte and by last
	// byte, descending, when normalizing gave them (else nil: buildEdges
	// sorts them).
	byLo, byHi [][]Piece
	solidAll   bool // every edge is solid: min offsets need no rescan
}

// compile builds the solver representation of a validated problem.
func compile(p *Problem) (*compiled, error) {
	n := len(p.Items)
	c := &compiled{n: n, align: p.align()}
	c.size = make([]int64, n)
	c.pieces = make([][]Piece, n)
	c.byLo, c.byHi = make([][]Piece, n), make([][]Piece, n)
	g := c.align
	nTimes := 0
	for i := range p.Items {
		nTimes += 2 * len(p.Items[i].Pieces)
	}
	times := make([]Time, 0, nTimes)
	for i, it := range p.Items {
		c.size[i] = it.Size
		g = gcd(g, it.Size)
		c.pieces[i], c.byLo[i], c.byHi[i] = normalizePieces(it.Pieces)
		for _, pc := range c.pieces[i] {
			times = append(times, pc.Start, pc.End)
			g = gcd(g, gcd(pc.Lo, pc.Hi))
		}
	}
	c.grain = g
	slices.Sort(times)
	c.times = slices.Compact(times)
	c.nsec = max(len(c.times)-1, 0)
	sec := func(t Time) int32 {
		k, _ := slices.BinarySearch(c.times, t)
		return int32(k)
	}

	c.spans = make([][]span, n)
	c.extent = make([][2]int32, n)
	var sc spanScratch
	all := make([]span, 0, n)
	at := make([]int, n+1)
	for i := range n {
		at[i] = len(all)
		all = sc.appendSpans(all, c.pieces[i], sec)
	}
	at[n] = len(all)
	count := make([]int32, c.nsec+1)
	for i := range n {
		sp := all[at[i]:at[i+1]:at[i+1]]
		if len(sp) == 0 {
			continue
		}
		c.spans[i] = sp
		c.extent[i] = [2]int32{sp[0].s0, sp[len(sp)-1].s1}
		for _, s := range sp {
			for k := s.s0; k < s.s1; k++ {
				count[k]++
			}
		}
	}
	// secItems: one array, carved per section.
	var total int64
	for k := range c.nsec {
		total += int64(count[k])
	}
	if total > maxItemSections {
		return nil, fmt.Errorf("%d items over %d sections live %d item-sections at once, more than the %d the planner holds: %w",
			n, c.nsec, total, maxItemSections, ErrTooLarge)
	}
	items := make([]int32, total)
	c.secItems = make([][]int32, c.nsec)
	pos := int32(0)
	for k := range c.nsec {
		c.secItems[k] = items[pos : pos : pos+count[k]]
		pos += count[k]
	}
	for i := range n {
		for _, s := range c.spans[i] {
			for k := s.s0; k < s.s1; k++ {
				c.secItems[k] = append(c.secItems[k], int32(i))
			}
		}
	}
	c.buildEdges(p)
	return c, nil
}

// maxItemSections bounds the (item, section) pairs compile lists: a
// problem whose buffers are live together by the tens of thousands (a
// fan-in of 10^5 inputs lists 5·10^9) is refused with ErrTooLarge instead
// of exhausting memory; its conflicts alone would not fit either.
// A variable so that tests can lower it.
var maxItemSections int64 = 1 << 28

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
		// Runs in old only end at t; runs in cur only start at t.
		a, b := 0, 0
		for a < len(old) || b < len(cur) {
			switch {
			case b == len(cur) || (a < len(old) && old[a][0] < cur[b][0]):
				out[open[old[a][0]]].End = t
				delete(open, old[a][0])
				a++
			case a == len(old) || cur[b][0] < old[a][0]:
				open[cur[b][0]] = len(out)
				out = append(out, Piece{Lo: xs[cur[b][0]], Hi: xs[cur[b][1]], Start: t})
				b++
			case old[a] == cur[b]:
				a, b = a+1, b+1 // the same run goes on
			default: // same first range, another end
				out[open[old[a][0]]].End = t
				open[cur[b][0]] = len(out)
				out = append(out, Piece{Lo: xs[cur[b][0]], Hi: xs[cur[b][1]], Start: t})
				a, b = a+1, b+1
			}
		}
	}
	return out
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
		// Runs in old only end at t; runs in cur only start at t.
		a, b := 0, 0
		for a < len(old) || b < len(cur) {
			switch {
			case b == len(cur) || (a < len(old) && old[a][0] < cur[b][0]):
				out[open[old[a][0]]].End = t
				a++
			case a == len(old) || cur[b][0] < old[a][0]:
				open[cur[b][0]] = len(out)
				out = append(out, Piece{Lo: ps[cur[b][0]].Lo, Hi: ps[cur[b][1]].Hi, Start: t})
				first, last = append(first, cur[b][0]), append(last, cur[b][1])
				b++
			case old[a] == cur[b]:
				a, b = a+1, b+1 // the same run goes on
			default: // same first piece, another end
				out[open[old[a][0]]].End = t
				open[cur[b][0]] = len(out)
				out = append(out, Piece{Lo: ps[cur[b][0]].Lo, Hi: ps[cur[b][1]].Hi, Start: t})
				first, last = append(first, cur[b][0]), append(last, cur[b][1])
				a, b = a+1, b+1
			}
		}
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

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// spanScratch is scratch space for appendSpans.
type spanScratch struct {
	secs   []int32
	bounds []int32
	delta  []int64
	run0   []int64
}

// appendSpans appends the per-section live bytes of an item's pieces,
// normalized (normalizePieces: the pieces live at a time are the runs of
// its live bytes), to out: per run of sections with the same live bytes and
// the same first run (from byte 0), one span. O(P log P) for P pieces.
func (sc *spanScratch) appendSpans(out []span, pieces []Piece, sec func(Time) int32) []span {
	switch len(pieces) {
	case 0:
		return out
	case 1:
		pc := pieces[0]
		var run0 int64
		if pc.Lo == 0 {
			run0 = pc.Hi
		}
		return append(out, span{s0: sec(pc.Start), s1: sec(pc.End), bytes: pc.Hi - pc.Lo, run0: run0})
	}
	secs := sc.secs[:0] // each piece's first and last section, looked up once
	for _, pc := range pieces {
		secs = append(secs, sec(pc.Start), sec(pc.End))
	}
	sc.secs = secs
	bounds := append(sc.bounds[:0], secs...)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	sc.bounds = bounds
	at := func(s int32) int {
		k, _ := slices.BinarySearch(bounds, s)
		return k
	}
	// delta[k]: change of the live bytes at bounds[k]; run0[k]: the first run
	// over slice k (runs from byte 0 never overlap in time).
	delta := append(sc.delta[:0], make([]int64, len(bounds))...)
	run0 := append(sc.run0[:0], make([]int64, len(bounds))...)
	sc.delta, sc.run0 = delta, run0
	for i, pc := range pieces {
		k0, k1 := at(secs[2*i]), at(secs[2*i+1])
		delta[k0] += pc.Hi - pc.Lo
		delta[k1] -= pc.Hi - pc.Lo
		if pc.Lo == 0 {
			for k := k0; k < k1; k++ {
				run0[k] = pc.Hi
			}
		}
	}
	first := len(out)
	var bytes int64
	for k := 0; k+1 < len(bounds); k++ {
		s0, s1 := bounds[k], bounds[k+1]
		bytes += delta[k]
		if bytes == 0 {
			continue
		}
		if m := len(out); m > first && out[m-1].s1 == s0 && out[m-1].bytes == bytes && out[m-1].run0 == run0[k] {
			out[m-1].s1 = s1
			continue
		}
		out = append(out, span{s0: s0, s1: s1, bytes: bytes, run0: run0[k]})
	}
	return out
}

// buildEdges finds every conflicting pair of items and the relative offsets
// it forbids, and widens cut extents over concurrent partners.
func (c *compiled) buildEdges(p *Problem) {
	n := c.n
	type pairRel struct {
		i, j int32 // i < j
		r    rel   // forbidden x_j - x_i
	}
	// all holds, per pair whose windows intersect, its forbidden intervals
	// already merged (a pair of items split into many pieces forbids as
	// many intervals per pair of pieces, mostly overlapping), and the
	// concurrent pairs' intervals as they come; the sort below groups and
	// merges them again.
	all := make([]pairRel, 0, 4*n+len(p.Concurrent))
	orient := func(i, j int, a, b Piece) rel {
		// Pieces a of i and b of j share a byte iff
		// x_j + b.Lo < x_i + a.Hi and x_i + a.Lo < x_j + b.Hi, that is
		// x_j - x_i in [a.Lo - b.Hi + 1, a.Hi - b.Lo).
		r := rel{a.Lo - b.Hi + 1, a.Hi - b.Lo}
		if i > j {
			r = rel{-r.hi + 1, -r.lo + 1}
		}
		return r
	}
	add := func(i, j int, a, b Piece) {
		all = append(all, pairRel{int32(min(i, j)), int32(max(i, j)), orient(i, j, a, b)})
	}
	// byLo: each item's pieces by their first byte. A pair's intervals,
	// one piece against those of the other item, then come in order (or in
	// reverse order) of their first offset.
	byLo := make([][]Piece, n)
	for i := range n {
		if byLo[i] = c.byLo[i]; byLo[i] != nil {
			continue // normalizing gave them
		}
		byLo[i] = c.pieces[i]
		if !slices.IsSortedFunc(byLo[i], cmpPieceLo) {
			byLo[i] = slices.Clone(byLo[i])
			slices.SortFunc(byLo[i], cmpPieceLo)
		}
	}
	// byHi: an item's pieces by last byte, descending, sorted when first
	// asked for.
	byHi := slices.Clone(c.byHi)
	hiDesc := func(i int) []Piece {
		if byHi[i] == nil {
			byHi[i] = slices.Clone(c.pieces[i])
			slices.SortFunc(byHi[i], func(a, b Piece) int { return cmp64(b.Hi, a.Hi) })
		}
		return byHi[i]
	}
	var rs []rel // scratch: one pair's intervals
	addPair := func(j, i int) {
		// Forbidden x_B - x_A for pieces a of A and b of B:
		// [a.Lo - b.Hi + 1, a.Hi - b.Lo), ascending in a.Lo and in -b.Hi.
		A, B := min(i, j), max(i, j)
		rs = rs[:0]
		switch {
		case len(c.pieces[B]) == 1:
			b := c.pieces[B][0]
			for _, a := range byLo[A] {
				if a.Start < b.End && b.Start < a.End {
					rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
				}
			}
		case len(c.pieces[A]) == 1:
			a := c.pieces[A][0]
			for _, b := range hiDesc(B) {
				if a.Start < b.End && b.Start < a.End {
					rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
				}
			}
		default:
			for _, a := range byLo[A] {
				for _, b := range byLo[B] {
					if a.Start < b.End && b.Start < a.End {
						rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
					}
				}
			}
			if !slices.IsSortedFunc(rs, cmpRel) {
				slices.SortFunc(rs, cmpRel)
			}
		}
		lo, hi := int32(min(i, j)), int32(max(i, j))
		first := len(all)
		for _, r := range rs {
			if m := len(all); m > first && r.lo <= all[m-1].r.hi {
				all[m-1].r.hi = max(all[m-1].r.hi, r.hi)
				continue
			}
			all = append(all, pairRel{lo, hi, r})
		}
	}
	// Sweep items by extent to find pairs whose windows may intersect.
	order := make([]int, 0, n)
	for i := range n {
		if len(c.pieces[i]) > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(c.extent[a][0] - c.extent[b][0]) })
	var active []int
	for _, i := range order {
		keep := active[:0]
		for _, j := range active {
			if c.extent[j][1] > c.extent[i][0] {
				keep = append(keep, j)
			}
		}
		active = keep
		for _, j := range active {
			addPair(j, i)
		}
		active = append(active, i)
	}
	c.cutExtent = slices.Clone(c.extent)
	for _, pp := range p.Concurrent {
		i, j := pp.A.Item, pp.B.Item
		add(i, j, p.Items[i].Pieces[pp.A.Piece], p.Items[j].Pieces[pp.B.Piece])
		for _, k := range [2]int{i, j} {
			o := i + j - k
			e, oe := &c.cutExtent[k], c.extent[o]
			if oe[0] < oe[1] {
				e[0], e[1] = min(e[0], oe[0]), max(e[1], oe[1])
			}
		}
	}
	c.edges = make([][]edge, n)
	c.solidAll = true
	slices.SortFunc(all, func(a, b pairRel) int {
		if a.i != b.i {
			return int(a.i - b.i)
		}
		if a.j != b.j {
			return int(a.j - b.j)
		}
		return cmp64(a.r.lo, b.r.lo)
	})
	// Degrees first, so that every item's edges and every edge's intervals
	// are carved out of one array each.
	deg := make([]int32, n)
	pairs := 0
	for g := 0; g < len(all); g++ {
		if g == 0 || all[g].i != all[g-1].i || all[g].j != all[g-1].j {
			deg[all[g].i]++
			deg[all[g].j]++
			pairs++
		}
	}
	edges := make([]edge, 2*pairs)
	at := int32(0)
	for i := range n {
		c.edges[i] = edges[at : at : at+deg[i]]
		at += deg[i]
	}
	rels := make([]rel, 2*len(all))
	for g := 0; g < len(all); {
		i, j := all[g].i, all[g].j
		h := g
		for h < len(all) && all[h].i == i && all[h].j == j {
			h++
		}
		rs := rels[: 0 : h-g] // forbidden x_j - x_i, merged
		for _, pr := range all[g:h] {
			if m := len(rs); m > 0 && pr.r.lo <= rs[m-1].hi {
				rs[m-1].hi = max(rs[m-1].hi, pr.r.hi)
				continue
			}
			rs = append(rs, pr.r)
		}
		g = h
		neg := rels[len(rs) : 2*len(rs) : 2*len(rs)] // forbidden x_i - x_j
		rels = rels[2*len(rs):]
		for m, r := range rs {
			neg[len(rs)-1-m] = rel{-r.hi + 1, -r.lo + 1}
		}
		solid := len(rs) == 1 && rs[0] == rel{-c.size[j] + 1, c.size[i]}
		c.solidAll = c.solidAll && solid
		c.edges[j] = append(c.edges[j], edge{other: i, solid: solid, rels: rs})
		c.edges[i] = append(c.edges[i], edge{other: j, solid: solid, rels: neg})
	}
}

// cmpPieceLo orders pieces by their first byte.
func cmpPieceLo(a, b Piece) int { return cmp64(a.Lo, b.Lo) }

// cmpRel orders intervals by their first offset.
func cmpRel(a, b rel) int { return cmp64(a.lo, b.lo) }

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// lowerBound is the larger of liveBound and holeBound: no placement is
// lower.
func (c *compiled) lowerBound() int64 { return max(c.liveBound(), c.holeBound()) }

// liveBound is the largest number of bytes live in any one section, or
// the largest item if that is larger: no placement can be lower, since
// bytes live at one time are pairwise disjoint and every item's bytes
// [offset, offset+size) count toward the height.
func (c *compiled) liveBound() int64 {
	total := make([]int64, c.nsec)
	var lb int64
	for _, sz := range c.size {
		lb = max(lb, sz)
	}
	for i := range c.n {
		for _, s := range c.spans[i] {
			for k := s.s0; k < s.s1; k++ {
				total[k] += s.bytes
			}
		}
	}
	for _, t := range total {
		lb = max(lb, t)
	}
	return lb
}

// LowerBound returns a height no placement of a valid problem can beat:
// the larger of the most bytes live at any one time (or the largest item)
// and the hole bound, which counts the span an item with holes pins
// together with the live runs that cannot hide in its holes (see
// Solution.LowerBound).
func LowerBound(p *Problem) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	c, err := compile(p)
	if err != nil {
		return 0, err
	}
	return c.lowerBound(), nil
}
