package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/trace/internal/tracetest"
)

// The reference normalization and spans of compile as they were: per time slice between
// consecutive piece boundaries, the union of the bytes live there (Θ(slices × pieces)).

// refNormalizePieces rewrites pieces as disjoint rectangles: for each time
// slice between consecutive piece boundaries, the union of the byte ranges
// live there; consecutive slices with equal unions merge into one window.
func refNormalizePieces(in []Piece) []Piece {
	if len(in) <= 1 {
		return in[:len(in):len(in)] // read only: shared with the problem
	}
	var bounds []Time
	for _, pc := range in {
		bounds = append(bounds, pc.Start, pc.End)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	var out []Piece
	var prev [][2]int64 // byte ranges of the previous slice
	var open []int      // indexes into out of the pieces of the previous slice
	var cur [][2]int64
	for k := 0; k+1 < len(bounds); k++ {
		t0, t1 := bounds[k], bounds[k+1]
		cur = cur[:0]
		for _, pc := range in {
			if pc.Start <= t0 && t1 <= pc.End {
				cur = append(cur, [2]int64{pc.Lo, pc.Hi})
			}
		}
		cur = refUnionRanges(cur)
		if len(open) > 0 && refEqualRanges(cur, prev) {
			for _, idx := range open {
				out[idx].End = t1
			}
			continue
		}
		open = open[:0]
		for _, r := range cur {
			open = append(open, len(out))
			out = append(out, Piece{Lo: r[0], Hi: r[1], Start: t0, End: t1})
		}
		prev = append(prev[:0], cur...)
	}
	return out
}

// refUnionRanges sorts half-open ranges and merges overlapping or touching ones.
func refUnionRanges(rs [][2]int64) [][2]int64 {
	if len(rs) <= 1 {
		return rs
	}
	slices.SortFunc(rs, func(a, b [2]int64) int { return cmp64(a[0], b[0]) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r[0] <= last[1] {
			last[1] = max(last[1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

func refEqualRanges(a, b [][2]int64) bool { return slices.Equal(a, b) }

// refSpans returns the spans of an item's normalized pieces section by section: for each
// section from the pieces' first to their last, the bytes of the pieces live over it and
// the run from byte 0 among them, adjacent sections alike merging into one span.
func refSpans(pieces []Piece, sec func(Time) int32) []span {
	if len(pieces) == 0 {
		return nil
	}
	first, last := int32(math.MaxInt32), int32(math.MinInt32)
	for _, pc := range pieces {
		first, last = min(first, sec(pc.Start)), max(last, sec(pc.End))
	}
	var out []span
	for s := first; s < last; s++ {
		var bytes int64
		var rs [][2]int64
		for _, pc := range pieces {
			if sec(pc.Start) <= s && s < sec(pc.End) {
				bytes += pc.Hi - pc.Lo
				rs = append(rs, [2]int64{pc.Lo, pc.Hi})
			}
		}
		if bytes == 0 {
			continue
		}
		var run0 int64
		if rs = refUnionRanges(rs); rs[0][0] == 0 {
			run0 = rs[0][1]
		}
		if m := len(out); m > 0 && out[m-1].s1 == s && out[m-1].bytes == bytes && out[m-1].run0 == run0 {
			out[m-1].s1++
		} else {
			out = append(out, span{s0: s, s1: s + 1, bytes: bytes, run0: run0})
		}
	}
	return out
}

// TestNormalizeAgainstReference: on random problems (pieces of one item may overlap) and
// on the planner's problems of the generated shapes, normalizePieces covers exactly the
// bytes the reference covers at every time, in run form (the pieces live at a time are
// the maximal runs of the live bytes), with the same piece boundaries in time; and what
// compile derives from it (sections, spans, extents, edges) is what it derives from the
// reference's pieces.
func TestNormalizeAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for iter := range 400 {
		p := &Problem{Align: 1}
		for it := range 1 + rng.IntN(5) {
			size := int64(1 + rng.IntN(40))
			item := Item{Name: fmt.Sprint("i", it), Size: size}
			for range 1 + rng.IntN(8) {
				lo := rng.Int64N(size)
				hi := lo + 1 + rng.Int64N(size-lo)
				s := rng.IntN(20)
				item.Pieces = append(item.Pieces, Piece{Lo: lo, Hi: hi, Start: s, End: s + 1 + rng.IntN(8)})
			}
			p.Items = append(p.Items, item)
		}
		compareNormalized(t, fmt.Sprint("random ", iter), p, true)
	}
	for _, sh := range planScaleShapes {
		n := sh.sizes[0]
		tr := scaleTrace(t, sh.gen(n))
		pr := tracetest.Resolve(t, tr)
		hb, order, err := relation(pr)
		if err != nil {
			t.Fatal(err)
		}
		ip := newInplacer(pr, hb, true)
		ip.order = order
		ip.decide()
		compareNormalized(t, fmt.Sprintf("%s/%d", sh.name, n), derive(ip).prob, false)
	}
	views := scaleTrace(t, tracetest.Views(200))
	pr, _ := views.Resolve()
	hb, _ := happensBefore(pr)
	ip := newInplacer(pr, hb, true)
	compareNormalized(t, "views/200", derive(ip).prob, false)
}

func compareNormalized(t *testing.T, name string, p *Problem, raster bool) {
	t.Helper()
	c := mustCompile(p)
	if err := c.CheckInvariants(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ref := make([][]Piece, len(p.Items))
	var times []Time
	for i, it := range p.Items {
		ref[i] = refNormalizePieces(it.Pieces)
		for _, pc := range ref[i] {
			times = append(times, pc.Start, pc.End)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	if !slices.Equal(times, c.times) {
		t.Fatalf("%s: sections at %v, reference %v", name, c.times, times)
	}
	sec := func(tm Time) int32 {
		k, _ := slices.BinarySearch(c.times, tm)
		return int32(k)
	}
	for i := range p.Items {
		var area, refArea int64
		for _, pc := range c.pieces[i] {
			area += pc.Bytes() * int64(pc.End-pc.Start)
		}
		for _, pc := range ref[i] {
			refArea += pc.Bytes() * int64(pc.End-pc.Start)
		}
		if area != refArea {
			t.Fatalf("%s item %d: area %d, reference %d", name, i, area, refArea)
		}
		if want := refSpans(ref[i], sec); !slices.Equal(c.spans[i], want) {
			t.Fatalf("%s item %d: spans %v, reference %v", name, i, c.spans[i], want)
		}
		// Run form: the pieces live at a time are disjoint and never touch.
		for _, tm := range c.times {
			var live [][2]int64
			for _, pc := range c.pieces[i] {
				if pc.Start <= tm && tm < pc.End {
					live = append(live, [2]int64{pc.Lo, pc.Hi})
				}
			}
			slices.SortFunc(live, func(a, b [2]int64) int { return cmp64(a[0], b[0]) })
			for k := 1; k < len(live); k++ {
				if live[k][0] <= live[k-1][1] {
					t.Fatalf("%s item %d at %d: pieces %v overlap or touch", name, i, tm, live)
				}
			}
		}
		if raster {
			for tm := c.times[0]; tm < c.times[len(c.times)-1]; tm++ {
				for x := range p.Items[i].Size {
					in := func(ps []Piece) int {
						n := 0
						for _, pc := range ps {
							if pc.Start <= tm && tm < pc.End && pc.Lo <= x && x < pc.Hi {
								n++
							}
						}
						return n
					}
					got, want := in(c.pieces[i]), min(in(ref[i]), 1)
					if got != want {
						t.Fatalf("%s item %d: byte %d at %d covered %d times, reference %d", name, i, x, tm, got, want)
					}
				}
			}
		}
	}
	rc := *c
	rc.pieces, rc.byLo, rc.byHi = ref, make([][]Piece, len(ref)), make([][]Piece, len(ref))
	rc.buildEdges(p)
	for i := range c.n {
		got, want := slices.Clone(c.edges[i]), slices.Clone(rc.edges[i])
		byOther := func(a, b edge) int { return int(a.other - b.other) }
		slices.SortFunc(got, byOther)
		slices.SortFunc(want, byOther)
		if !slices.EqualFunc(got, want, func(a, b edge) bool {
			return a.other == b.other && a.solid == b.solid && slices.Equal(a.rels, b.rels)
		}) {
			t.Fatalf("%s item %d: edges %v, reference %v", name, i, got, want)
		}
	}
	if !slices.Equal(c.cutExtent, rc.cutExtent) || c.solidAll != rc.solidAll {
		t.Fatalf("%s: cut extents %v / %v, reference %v / %v", name, c.cutExtent, c.solidAll, rc.cutExtent, rc.solidAll)
	}
}

// mustCompile is compile for problems the tests know to be small enough.
func mustCompile(p *Problem) *compiled {
	c, err := compile(p)
	if err != nil {
		panic(err)
	}
	return c
}

// TestCompileTooLarge: a problem with more item-sections than the planner
// holds is refused with ErrTooLarge by Solve and LowerBound, not a panic or
// an exhausted memory (a fan-in of 10^5 buffers live together did both).
func TestCompileTooLarge(t *testing.T) {
	p := loadInstance(t, "C")
	defer func(old int64) { maxItemSections = old }(maxItemSections)
	maxItemSections = 10
	if _, err := Solve(p, SolveOptions{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Solve: %v, want ErrTooLarge", err)
	}
	if _, err := LowerBound(p); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("LowerBound: %v, want ErrTooLarge", err)
	}
}

// TestNormalizeDisjoint: on pieces pairwise disjoint in bytes, many of them
// touching, at few distinct times, normalizeDisjoint takes them and gives
// the cover tree's pieces in its order; pieces that overlap in bytes, or
// that start and end at too many times, it leaves to the tree.
func TestNormalizeDisjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for iter := range 2000 {
		var in []Piece
		lo := int64(0)
		nTimes := 1 + rng.IntN(6)
		for range 1 + rng.IntN(40) {
			if rng.IntN(3) == 0 {
				lo += 1 + rng.Int64N(3) // a gap
			}
			hi := lo + 1 + rng.Int64N(5)
			s := rng.IntN(nTimes)
			in = append(in, Piece{Lo: lo, Hi: hi, Start: s, End: s + 1 + rng.IntN(nTimes)})
			lo = hi
		}
		rng.Shuffle(len(in), func(a, b int) { in[a], in[b] = in[b], in[a] })
		got, byLo, byHi, ok := normalizeDisjoint(in)
		if !ok {
			t.Fatalf("iter %d: disjoint pieces %v refused", iter, in)
		}
		if want := normalizeCover(in); !slices.Equal(got, want) {
			t.Fatalf("iter %d: %v\ngot  %v\nwant %v", iter, in, got, want)
		}
		sorted := slices.Clone(got)
		slices.SortStableFunc(sorted, cmpPieceLo)
		if !slices.IsSortedFunc(byLo, cmpPieceLo) || !sameMultiset(byLo, sorted) {
			t.Fatalf("iter %d: by first byte %v, pieces %v", iter, byLo, got)
		}
		if !slices.IsSortedFunc(byHi, func(a, b Piece) int { return cmp64(b.Hi, a.Hi) }) || !sameMultiset(byHi, sorted) {
			t.Fatalf("iter %d: by last byte %v, pieces %v", iter, byHi, got)
		}
	}
	if _, _, _, ok := normalizeDisjoint([]Piece{{Lo: 0, Hi: 4, Start: 0, End: 2}, {Lo: 3, Hi: 6, Start: 1, End: 3}}); ok {
		t.Error("pieces overlapping in bytes taken")
	}
	var many []Piece
	for k := range maxDisjointTimes {
		many = append(many, Piece{Lo: int64(k), Hi: int64(k + 1), Start: k, End: k + 1})
	}
	if _, _, _, ok := normalizeDisjoint(many); ok {
		t.Errorf("%d pieces at %d times taken", len(many), 2*len(many))
	}
}

// sameMultiset reports whether a and b hold the same pieces, in any order.
func sameMultiset(a, b []Piece) bool {
	key := func(x, y Piece) int {
		return cmp.Or(cmp64(x.Lo, y.Lo), cmp64(x.Hi, y.Hi), cmp.Compare(x.Start, y.Start), cmp.Compare(x.End, y.End))
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, key)
	slices.SortFunc(b, key)
	return slices.Equal(a, b)
}

// TestEdgesAgainstReference: on random problems whose items have one piece
// or many (disjoint in bytes, as derive makes them, or overlapping), every
// edge forbids exactly the relative offsets at which some live byte of one
// item meets one of the other, tried one by one, and no pair without an
// edge has such an offset.
func TestEdgesAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	for iter := range 300 {
		p := &Problem{Align: 1}
		for it := range 2 + rng.IntN(4) {
			size := int64(1 + rng.IntN(24))
			item := Item{Name: fmt.Sprint("i", it), Size: size}
			if rng.IntN(3) == 0 {
				s := rng.IntN(10)
				item.Pieces = []Piece{{Lo: 0, Hi: size, Start: s, End: s + 1 + rng.IntN(6)}}
			} else {
				for lo := int64(0); lo < size; {
					hi := min(size, lo+1+rng.Int64N(4))
					s := rng.IntN(10)
					item.Pieces = append(item.Pieces, Piece{Lo: lo, Hi: hi, Start: s, End: s + 1 + rng.IntN(6)})
					lo = hi + rng.Int64N(2)
				}
			}
			p.Items = append(p.Items, item)
		}
		c := mustCompile(p)
		for i := range c.n {
			for j := i + 1; j < c.n; j++ {
				var e *edge
				for k := range c.edges[i] {
					if c.edges[i][k].other == int32(j) {
						e = &c.edges[i][k]
					}
				}
				for d := -c.size[i] - 2; d <= c.size[j]+2; d++ { // x_i - x_j = d
					meet := false
					for _, a := range p.Items[i].Pieces {
						for _, b := range p.Items[j].Pieces {
							if a.Start < b.End && b.Start < a.End && d+a.Lo < b.Hi && b.Lo < d+a.Hi {
								meet = true
							}
						}
					}
					forbidden := false
					if e != nil {
						for _, r := range e.rels {
							forbidden = forbidden || (r.lo <= d && d < r.hi)
						}
					}
					if meet != forbidden {
						t.Fatalf("iter %d items %d, %d at x_i - x_j = %d: bytes meet %v, edge forbids %v (%+v)\n%+v",
							iter, i, j, d, meet, forbidden, e, p.Items)
					}
				}
			}
		}
	}
}
