package ranges

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/subarena/subarena/internal/testutil"
)

// The reference model: a bitmap over the universe [modelLo, modelLo+modelN). Every
// operation of Set is replayed on bitmaps and the results compared byte by byte.

const (
	modelLo = -32
	modelN  = 160
)

func bitOf(x int64) uint { return uint(x - modelLo) }

func modelOfRange(r Range) *bitset.BitSet {
	b := bitset.New(modelN)
	for x := r.Lo; x < r.Hi; x++ {
		b.Set(bitOf(x))
	}
	return b
}

func modelOf(s *Set) *bitset.BitSet {
	b := bitset.New(modelN)
	for r := range s.All() {
		for x := r.Lo; x < r.Hi; x++ {
			b.Set(bitOf(x))
		}
	}
	return b
}

// setOfModel builds the expected normalized runs of a bitmap, independently
// of Set's code: testutil.BitRuns visits every value of the universe.
func setOfModel(b *bitset.BitSet) []Range {
	var runs []Range
	testutil.BitRuns(b, modelLo, modelN, func(lo, hi int64) { runs = append(runs, Range{lo, hi}) })
	return runs
}

func randRange(rng *rand.Rand) Range {
	lo := modelLo + rng.Int64N(modelN)
	n := rng.Int64N(24)
	if rng.IntN(8) == 0 {
		n = rng.Int64N(modelN)
	}
	hi := min(lo+n, modelLo+modelN)
	if rng.IntN(16) == 0 {
		return Range{hi, lo} // reversed: empty
	}
	return Range{lo, hi}
}

func randSet(rng *rand.Rand) Set {
	var rs []Range
	for range rng.IntN(12) {
		rs = append(rs, randRange(rng))
	}
	s := FromRanges(rs...)
	if rng.IntN(2) == 0 { // exercise both the in-place and the growing merge
		s.runs = append(make([]Range, 0, len(s.runs)+rng.IntN(16)), s.runs...)
	}
	return s
}

// checkAgainst fails unless s is normalized and holds exactly the bytes of m.
func checkAgainst(t *testing.T, step string, s *Set, m *bitset.BitSet) {
	t.Helper()
	if err := s.CheckInvariants(); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	want := setOfModel(m)
	got := s.Runs()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", step, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", step, got, want)
		}
	}
	if s.Len() != int64(m.Count()) {
		t.Fatalf("%s: Len %d, model %d", step, s.Len(), m.Count())
	}
}

// newSetOps are the operations TestSetAgainstBitmap's ops 8 and 9 pick
// from with a coin: each returns a new Set from s and o or r, and model
// returns the bitmap of that Set from those of s, o and r.
var newSetOps = [2][2]struct {
	name  string
	apply func(s, o *Set, r Range) Set
	model func(m, om, rm *bitset.BitSet) *bitset.BitSet
}{
	{
		{"Intersect", func(s, o *Set, _ Range) Set { return Intersect(s, o) },
			func(m, om, _ *bitset.BitSet) *bitset.BitSet { return m.Intersection(om) }},
		{"IntersectRange", func(s, _ *Set, r Range) Set { return s.IntersectRange(r) },
			func(m, _, rm *bitset.BitSet) *bitset.BitSet { return m.Intersection(rm) }},
	},
	{
		{"Subtract", func(s, o *Set, _ Range) Set { return Subtract(s, o) },
			func(m, om, _ *bitset.BitSet) *bitset.BitSet { return m.Difference(om) }},
		{"Subtract from o", func(s, o *Set, _ Range) Set { return Subtract(o, s) },
			func(m, om, _ *bitset.BitSet) *bitset.BitSet { return om.Difference(m) }},
	},
}

func TestSetAgainstBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 200 {
		var s Set
		m := bitset.New(modelN)
		for step := range 60 {
			o := randSet(rng)
			om := modelOf(&o)
			r := randRange(rng)
			rm := modelOfRange(r)
			name := ""
			switch op := rng.IntN(10); op {
			case 0, 1:
				name = "Add " + r.String()
				s.Add(r)
				m.InPlaceUnion(rm)
			case 2, 3:
				name = "Remove " + r.String()
				s.Remove(r)
				m.InPlaceDifference(rm)
			case 4:
				name = "AddSet " + o.String()
				s.AddSet(&o)
				m.InPlaceUnion(om)
			case 5:
				name = "RemoveSet " + o.String()
				s.RemoveSet(&o)
				m.InPlaceDifference(om)
			case 6:
				name = "RetainSet " + o.String()
				s.RetainSet(&o)
				m.InPlaceIntersection(om)
			case 7:
				name = "Union"
				s = Union(&s, &o)
				m.InPlaceUnion(om)
			case 8, 9:
				v := newSetOps[op-8][rng.IntN(2)]
				name = v.name
				s = v.apply(&s, &o, r)
				m = v.model(m, om, rm)
			}
			checkAgainst(t, name, &s, m)
			if t.Failed() {
				t.Fatalf("iteration %d step %d", iter, step)
			}
			checkQueries(t, rng, &s, m, &o, om)
		}
	}
}

// checkQueries compares every read-only query of s with the model.
func checkQueries(t *testing.T, rng *rand.Rand, s *Set, m *bitset.BitSet, o *Set, om *bitset.BitSet) {
	t.Helper()
	for x := int64(modelLo); x < modelLo+modelN; x++ {
		if s.Contains(x) != m.Test(bitOf(x)) {
			t.Fatalf("Contains(%d) = %v on %v", x, s.Contains(x), s.String())
		}
	}
	for range 8 {
		r := randRange(rng)
		rm := modelOfRange(r)
		inter := m.Intersection(rm)
		if got, want := s.ContainsRange(r), inter.Count() == rm.Count(); got != want {
			t.Fatalf("ContainsRange(%v) = %v on %v", r, got, s.String())
		}
		got, ok := s.Overlaps(r)
		first, any := inter.NextSet(0)
		if ok != any {
			t.Fatalf("Overlaps(%v) = %v on %v", r, ok, s.String())
		}
		if ok {
			// The lowest shared byte starts the answer; the answer is a maximal run of s ∩ r.
			want := setOfModel(inter)[0]
			if got != want || bitOf(got.Lo) != first {
				t.Fatalf("Overlaps(%v) = %v, want %v", r, got, want)
			}
		}
		// RunsOverlapping: exactly the runs of s sharing a byte with r.
		var wantRuns []Range
		for _, run := range s.Runs() {
			if run.Overlaps(r) {
				wantRuns = append(wantRuns, run)
			}
		}
		if got := s.RunsOverlapping(r); !slices.Equal(got, wantRuns) || cap(got) != len(got) {
			t.Fatalf("RunsOverlapping(%v) = %v on %v, want %v", r, got, s.String(), wantRuns)
		}
	}
	inter := m.Intersection(om)
	got, ok := s.OverlapsSet(o)
	if ok != (inter.Count() > 0) {
		t.Fatalf("OverlapsSet = %v on %v, %v", ok, s.String(), o.String())
	}
	if ok && got != setOfModel(inter)[0] {
		t.Fatalf("OverlapsSet = %v, want %v", got, setOfModel(inter)[0])
	}
	if got2, ok2 := o.OverlapsSet(s); ok2 != ok || got2 != got {
		t.Fatalf("OverlapsSet not symmetric: %v %v vs %v %v", got, ok, got2, ok2)
	}
	b := s.Bounds()
	if first, any := m.NextSet(0); any {
		last := uint(0)
		for i, e := m.NextSet(0); e; i, e = m.NextSet(i + 1) {
			last = i
		}
		if b != (Range{int64(first) + modelLo, int64(last) + modelLo + 1}) {
			t.Fatalf("Bounds = %v on %v", b, s.String())
		}
	} else if !b.Empty() || !s.IsEmpty() {
		t.Fatalf("Bounds/IsEmpty of empty set: %v", b)
	}
	c := s.Clone()
	if !c.Equal(s) || (c.NumRuns() > 0 && &c.runs[0] == &s.runs[0]) {
		t.Fatalf("Clone is not an independent equal copy")
	}
	n := 0
	for r := range s.All() {
		if r != s.runs[n] {
			t.Fatalf("All yielded %v at %d", r, n)
		}
		n++
	}
	if n != s.NumRuns() {
		t.Fatalf("All yielded %d runs of %d", n, s.NumRuns())
	}
}

func TestAlignAgainstBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		s := randSet(rng)
		g := int64(1) << rng.IntN(5)
		if rng.IntN(4) == 0 {
			g = 1 + rng.Int64N(7)
		}
		m := modelOf(&s)
		wantOut := bitset.New(modelN)
		wantIn := bitset.New(modelN)
		// Granules fully inside the model universe: [modelLo + k·g ...). modelLo is a
		// multiple of every power of two up to 32, and we only look at whole granules.
		for start := floorMul(modelLo, g); start < modelLo+modelN; start += g {
			touched, full := false, true
			for x := start; x < start+g; x++ {
				in := x >= modelLo && x < modelLo+modelN && m.Test(bitOf(x))
				touched = touched || in
				full = full && in
			}
			for x := start; x < start+g; x++ {
				if x < modelLo || x >= modelLo+modelN {
					continue
				}
				if touched {
					wantOut.Set(bitOf(x))
				}
				if full {
					wantIn.Set(bitOf(x))
				}
			}
		}
		out := s.AlignOut(g)
		in := s.AlignIn(g)
		outClip := out.IntersectRange(Range{modelLo, modelLo + modelN})
		checkAgainst(t, "AlignOut", &outClip, wantOut)
		checkAgainst(t, "AlignIn", &in, wantIn)
		testutil.Invariants(t, &out)
		for _, r := range out.Runs() {
			if floorMul(r.Lo, g) != r.Lo || floorMul(r.Hi, g) != r.Hi {
				t.Fatalf("AlignOut(%d) run %v not aligned", g, r)
			}
		}
	}
}
