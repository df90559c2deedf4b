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
