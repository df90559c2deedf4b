package fuzz

import (
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/ranges"
)

// FuzzRanges decodes the input into a sequence of operations on two ranges.Sets, s and o,
// replays each on a bitmap model, and after every step checks both sets' invariants and
// every byte against the model, plus the read-only queries.
//
// Encoding: triples (op, a, b). The range of a triple is [a-16, a-16+b%64), reversed (so
// empty) when b >= 224; its point is a-16. Coordinates stay in [-16, 303], inside the
// model universe [rfModelLo, rfModelLo+rfModelN).
func FuzzRanges(f *testing.F) {
	f.Add([]byte{0, 10, 20, 0, 40, 10, 1, 15, 3, 2, 12, 30, 4, 0, 0, 5, 0, 0})
	f.Add([]byte{2, 0, 63, 0, 70, 63, 6, 0, 0, 15, 3, 0, 16, 40, 0, 1, 80, 200})
	f.Add([]byte{0, 0, 10, 0, 10, 10, 0, 21, 1, 9, 0, 0, 10, 0, 0, 12, 0, 0, 7, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var s, o ranges.Set
		ms, mo := bitset.New(rfModelN), bitset.New(rfModelN)
		for step := 0; len(data) >= 3 && step < 256; step++ {
			op, a, b := data[0], data[1], data[2]
			data = data[3:]
			r := ranges.Range{Lo: int64(a) - 16, Hi: int64(a) - 16 + int64(b%64)}
			if b >= 224 {
				r.Lo, r.Hi = r.Hi, r.Lo
			}
			mr := rfModelOfRange(r)
			switch op % 17 {
			case 0:
				s.Add(r)
				ms.InPlaceUnion(mr)
			case 1:
				s.Remove(r)
				ms.InPlaceDifference(mr)
			case 2:
				o.Add(r)
				mo.InPlaceUnion(mr)
			case 3:
				o.Remove(r)
				mo.InPlaceDifference(mr)
			case 4, 5, 6, 7, 8, 9, 10:
				so := rfSetOps[op%17-4]
				so.apply(&s, &o)
				so.model(ms, mo)
			case 11:
				s = s.IntersectRange(r)
				ms.InPlaceIntersection(mr)
			case 12:
				s, o = o, s
				ms, mo = mo, ms
			case 13:
				o = s.Clone()
				mo = ms.Clone()
			case 14:
				s.Reset()
				ms.ClearAll()
			case 15:
				g := int64(1) << (a % 6)
				rfCheckAlign(t, &s, ms, g)
			case 16:
				d := int64(a) - 128
				before := s.Clone()
				if err := s.Translate(d); err != nil {
					t.Fatalf("Translate(%d): %v", d, err)
				}
				testutil.Invariants(t, &s)
				if !before.IsEmpty() && s.Bounds().Lo != before.Bounds().Lo+d {
					t.Fatalf("Translate(%d) moved %v to %v", d, before.Bounds(), s.Bounds())
				}
				if err := s.Translate(-d); err != nil || !s.Equal(&before) {
					t.Fatalf("Translate(%d) then back: %v, %v", d, err, s.String())
				}
			}
			rfCheck(t, step, "s", &s, ms)
			rfCheck(t, step, "o", &o, mo)
			rfQueries(t, &s, ms, &o, mo, r)
		}
	})
}

// rfSetOps are the operations of s with o that ops 4 to 10 encode, in that
// order, each with its model: model(ms, mo) leaves in ms what apply(s, o)
// leaves in s.
var rfSetOps = [...]struct {
	apply func(s, o *ranges.Set)
	model func(ms, mo *bitset.BitSet)
}{
	{(*ranges.Set).AddSet, (*bitset.BitSet).InPlaceUnion},
	{(*ranges.Set).RemoveSet, (*bitset.BitSet).InPlaceDifference},
	{(*ranges.Set).RetainSet, (*bitset.BitSet).InPlaceIntersection},
	{func(s, o *ranges.Set) { *s = ranges.Union(s, o) }, (*bitset.BitSet).InPlaceUnion},
	{func(s, o *ranges.Set) { *s = ranges.Intersect(s, o) }, (*bitset.BitSet).InPlaceIntersection},
	{func(s, o *ranges.Set) { *s = ranges.Subtract(s, o) }, (*bitset.BitSet).InPlaceDifference},
	{func(s, o *ranges.Set) { *s = ranges.Subtract(o, s) }, func(ms, mo *bitset.BitSet) { *ms = *mo.Difference(ms) }},
}

const (
	rfModelLo = -64
	rfModelN  = 448
)

func rfBit(x int64) uint { return uint(x - rfModelLo) }

func rfModelOfRange(r ranges.Range) *bitset.BitSet {
	b := bitset.New(rfModelN)
	for x := r.Lo; x < r.Hi; x++ {
		b.Set(rfBit(x))
	}
	return b
}

// rfRuns returns the maximal runs of a model bitmap (testutil.BitRuns visits
// every value of the universe).
func rfRuns(b *bitset.BitSet) []ranges.Range {
	var runs []ranges.Range
	testutil.BitRuns(b, rfModelLo, rfModelN, func(lo, hi int64) { runs = append(runs, ranges.Range{Lo: lo, Hi: hi}) })
	return runs
}

func rfCheck(t *testing.T, step int, name string, s *ranges.Set, m *bitset.BitSet) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("step %d: %s: %v", step, name, err)
	}
	want, got := rfRuns(m), s.Runs()
	if len(want) != len(got) {
		t.Fatalf("step %d: %s = %v, model %v", step, name, got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("step %d: %s = %v, model %v", step, name, got, want)
		}
	}
	if s.Len() != int64(m.Count()) || s.NumRuns() != len(want) || s.IsEmpty() != (len(want) == 0) {
		t.Fatalf("step %d: %s: Len %d NumRuns %d, model %d bytes %d runs", step, name, s.Len(), s.NumRuns(), m.Count(), len(want))
	}
}

func rfQueries(t *testing.T, s *ranges.Set, ms *bitset.BitSet, o *ranges.Set, mo *bitset.BitSet, r ranges.Range) {
	t.Helper()
	if x := r.Lo; s.Contains(x) != ms.Test(rfBit(x)) {
		t.Fatalf("Contains(%d) = %v on %v", x, s.Contains(x), s.String())
	}
	mr := rfModelOfRange(r)
	inter := ms.Intersection(mr)
	if got, want := s.ContainsRange(r), inter.Count() == mr.Count(); got != want {
		t.Fatalf("ContainsRange(%v) = %v on %v", r, got, s.String())
	}
	got, ok := s.Overlaps(r)
	if want := rfRuns(inter); ok != (len(want) > 0) || (ok && got != want[0]) {
		t.Fatalf("Overlaps(%v) = %v %v on %v, want %v", r, got, ok, s.String(), want)
	}
	got, ok = s.OverlapsSet(o)
	if want := rfRuns(ms.Intersection(mo)); ok != (len(want) > 0) || (ok && got != want[0]) {
		t.Fatalf("OverlapsSet = %v %v, want %v", got, ok, want)
	}
}

func rfCheckAlign(t *testing.T, s *ranges.Set, ms *bitset.BitSet, g int64) {
	t.Helper()
	out, in := s.AlignOut(g), s.AlignIn(g)
	testutil.Invariants(t, &out)
	testutil.Invariants(t, &in)
	// Every granule [k·g, (k+1)·g) is in out iff s touches it, in in iff s covers it.
	for lo := int64(rfModelLo); lo < rfModelLo+rfModelN; lo += g {
		touched, full := false, true
		for x := lo; x < lo+g; x++ {
			in := ms.Test(rfBit(x))
			touched, full = touched || in, full && in
		}
		gr := ranges.Range{Lo: lo, Hi: lo + g}
		if out.ContainsRange(gr) != touched || (!touched && func() bool { _, hit := out.Overlaps(gr); return hit }()) {
			t.Fatalf("AlignOut(%d) = %v wrong on granule %v of %v", g, out.String(), gr, s.String())
		}
		if in.ContainsRange(gr) != full || (!full && func() bool { _, hit := in.Overlaps(gr); return hit }()) {
			t.Fatalf("AlignIn(%d) = %v wrong on granule %v of %v", g, in.String(), gr, s.String())
		}
	}
}
