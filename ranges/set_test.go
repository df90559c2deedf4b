package ranges

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
)

func TestFromRanges(t *testing.T) {
	cases := []struct {
		name string
		in   []Range
		want []Range
	}{
		{"nil", nil, nil},
		{"empties dropped", []Range{{3, 3}, {5, 1}}, nil},
		{"unsorted", []Range{{10, 12}, {0, 2}, {5, 6}}, []Range{{0, 2}, {5, 6}, {10, 12}}},
		// [0,4) and [4,8) touch: one run.
		{"touching merge", []Range{{4, 8}, {0, 4}}, []Range{{0, 8}}},
		{"overlap merge", []Range{{0, 5}, {3, 9}, {8, 10}, {20, 21}}, []Range{{0, 10}, {20, 21}}},
		{"contained", []Range{{0, 100}, {10, 20}, {30, 40}}, []Range{{0, 100}}},
		{"negative", []Range{{-10, -5}, {-5, 0}}, []Range{{-10, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.in)
			s := FromRanges(c.in...)
			testutil.Invariants(t, &s)
			if !slices.Equal(s.Runs(), c.want) {
				t.Errorf("FromRanges(%v) = %v, want %v", c.in, s.Runs(), c.want)
			}
			if !slices.Equal(in, c.in) {
				t.Errorf("FromRanges modified its input")
			}
		})
	}
}

func TestAddRemoveTable(t *testing.T) {
	//          0    5    10   15   20   25   30
	// base:    [###)     [####)    [####)
	//          [0,3)     [10,15)   [20,25)
	base := []Range{{0, 3}, {10, 15}, {20, 25}}
	cases := []struct {
		name string
		add  bool
		r    Range
		want []Range
	}{
		{"add empty", true, Range{7, 7}, base},
		{"add append", true, Range{30, 31}, []Range{{0, 3}, {10, 15}, {20, 25}, {30, 31}}},
		{"add touching last", true, Range{25, 27}, []Range{{0, 3}, {10, 15}, {20, 27}}},
		{"add front", true, Range{-5, -1}, []Range{{-5, -1}, {0, 3}, {10, 15}, {20, 25}}},
		{"add touching front", true, Range{-5, 0}, []Range{{-5, 3}, {10, 15}, {20, 25}}},
		{"add gap", true, Range{5, 7}, []Range{{0, 3}, {5, 7}, {10, 15}, {20, 25}}},
		{"add bridge touching both", true, Range{3, 10}, []Range{{0, 15}, {20, 25}}},
		{"add span all", true, Range{-1, 26}, []Range{{-1, 26}}},
		{"add inside", true, Range{11, 12}, base},
		{"add across two", true, Range{12, 22}, []Range{{0, 3}, {10, 25}}},
		{"remove empty", false, Range{11, 11}, base},
		{"remove miss", false, Range{4, 10}, base},
		{"remove split", false, Range{11, 13}, []Range{{0, 3}, {10, 11}, {13, 15}, {20, 25}}},
		{"remove left part", false, Range{8, 12}, []Range{{0, 3}, {12, 15}, {20, 25}}},
		{"remove right part", false, Range{13, 18}, []Range{{0, 3}, {10, 13}, {20, 25}}},
		{"remove whole", false, Range{10, 15}, []Range{{0, 3}, {20, 25}}},
		{"remove across trimming both", false, Range{1, 22}, []Range{{0, 1}, {22, 25}}},
		{"remove all", false, Range{-100, 100}, nil},
		{"remove across whole runs", false, Range{0, 16}, []Range{{20, 25}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := FromRanges(base...)
			if c.add {
				s.Add(c.r)
			} else {
				s.Remove(c.r)
			}
			testutil.Invariants(t, &s)
			if !slices.Equal(s.Runs(), c.want) {
				t.Errorf("got %v, want %v", s.Runs(), c.want)
			}
		})
	}
}

func TestExtremeCoordinates(t *testing.T) {
	var s Set
	s.Add(Range{math.MaxInt64 - 5, math.MaxInt64})
	s.Add(Range{math.MinInt64, math.MinInt64 + 5})
	s.Add(Range{math.MaxInt64 - 10, math.MaxInt64 - 5}) // touches the top run
	s.Add(Range{math.MinInt64 + 5, math.MinInt64 + 6})  // touches the bottom run
	testutil.Invariants(t, &s)
	want := []Range{{math.MinInt64, math.MinInt64 + 6}, {math.MaxInt64 - 10, math.MaxInt64}}
	if !slices.Equal(s.Runs(), want) {
		t.Fatalf("got %v, want %v", s.Runs(), want)
	}
	s.Remove(Range{math.MinInt64, math.MaxInt64})
	testutil.Invariants(t, &s)
	if !s.IsEmpty() {
		t.Fatalf("not empty: %v", s.String())
	}
	big := FromRanges(Range{math.MinInt64, 0}, Range{1, math.MaxInt64})
	if got := big.Len(); got != math.MaxInt64 {
		t.Errorf("saturated Len = %d", got)
	}
}

func TestTranslate(t *testing.T) {
	s := FromRanges(Range{0, 4}, Range{8, 12})
	if err := s.Translate(-2); err != nil {
		t.Fatal(err)
	}
	if want := []Range{{-2, 2}, {6, 10}}; !slices.Equal(s.Runs(), want) {
		t.Fatalf("got %v, want %v", s.Runs(), want)
	}
	before := s.Clone()
	err := s.Translate(math.MaxInt64)
	if !errors.Is(err, ErrOverflow) {
		t.Fatalf("err = %v, want ErrOverflow", err)
	}
	if !s.Equal(&before) {
		t.Fatalf("failed Translate changed the set: %v", s.String())
	}
	if err := s.Translate(math.MinInt64); !errors.Is(err, ErrOverflow) {
		t.Fatalf("err = %v, want ErrOverflow", err)
	}
}

func TestAlign(t *testing.T) {
	//   granules of 4:  |0   |4   |8   |12  |16  |20
	//   s:                [1,3)   [9,  15) [16,17)
	s := FromRanges(Range{1, 3}, Range{9, 15}, Range{16, 17}, Range{-3, -1})
	out := s.AlignOut(4)
	testutil.Invariants(t, &out)
	if want := []Range{{-4, 4}, {8, 20}}; !slices.Equal(out.Runs(), want) {
		t.Errorf("AlignOut = %v, want %v", out.Runs(), want)
	}
	in := s.AlignIn(4)
	testutil.Invariants(t, &in)
	if want := []Range{{12, 13}}; slices.Equal(in.Runs(), want) {
		t.Errorf("AlignIn kept a partial granule")
	}
	if want := []Range(nil); !slices.Equal(in.Runs(), want) {
		t.Errorf("AlignIn = %v, want none", in.Runs())
	}
	s2 := FromRanges(Range{3, 17})
	in = s2.AlignIn(4)
	if want := []Range{{4, 16}}; !slices.Equal(in.Runs(), want) {
		t.Errorf("AlignIn = %v, want %v", in.Runs(), want)
	}
	// Non-power-of-two granules and g <= 1.
	out = s2.AlignOut(3)
	if want := []Range{{3, 18}}; !slices.Equal(out.Runs(), want) {
		t.Errorf("AlignOut(3) = %v, want %v", out.Runs(), want)
	}
	for _, g := range []int64{0, 1, -8} {
		o := s.AlignOut(g)
		if !o.Equal(&s) {
			t.Errorf("AlignOut(%d) changed the set", g)
		}
	}
	// Saturation at the top of the line keeps a superset.
	top := FromRanges(Range{math.MaxInt64 - 3, math.MaxInt64})
	out = top.AlignOut(256)
	if !out.ContainsRange(top.Bounds()) {
		t.Errorf("saturated AlignOut %v lost bytes of %v", out.String(), top.String())
	}
}

func TestRunsIsClipped(t *testing.T) {
	s := FromRanges(Range{0, 1}, Range{5, 6})
	s.Add(Range{10, 11})
	r := s.Runs()
	_ = append(r, Range{100, 200}) // must not write into s's spare capacity
	s.Add(Range{20, 21})
	if want := []Range{{0, 1}, {5, 6}, {10, 11}, {20, 21}}; !slices.Equal(s.Runs(), want) {
		t.Fatalf("got %v", s.Runs())
	}
}

func TestStringAndBounds(t *testing.T) {
	var s Set
	if s.String() != "{}" || !s.Bounds().Empty() || !s.IsEmpty() || s.Len() != 0 {
		t.Fatalf("zero Set misbehaves: %v %v", s.String(), s.Bounds())
	}
	s = FromRanges(Range{8, 12}, Range{0, 4})
	if got := s.String(); got != "{[0, 4), [8, 12)}" {
		t.Errorf("String = %q", got)
	}
	if got := s.Bounds(); got != (Range{0, 12}) {
		t.Errorf("Bounds = %v", got)
	}
}

func TestCheckInvariantsDetects(t *testing.T) {
	bad := []Set{
		{runs: []Range{{3, 3}}},
		{runs: []Range{{0, 4}, {4, 8}}},
		{runs: []Range{{0, 4}, {2, 8}}},
		{runs: []Range{{10, 14}, {0, 4}}},
		{runs: []Range{{5, 1}}},
	}
	for _, s := range bad {
		if err := s.CheckInvariants(); !errors.Is(err, ErrBrokenInvariant) {
			t.Errorf("CheckInvariants(%v) = %v, want ErrBrokenInvariant", s.runs, err)
		}
	}
}

func TestSelfOperands(t *testing.T) {
	s := FromRanges(Range{0, 4}, Range{8, 12})
	s.AddSet(&s)
	if s.NumRuns() != 2 {
		t.Fatalf("AddSet(self) = %v", s.String())
	}
	s.RetainSet(&s)
	if s.NumRuns() != 2 {
		t.Fatalf("RetainSet(self) = %v", s.String())
	}
	s.RemoveSet(&s)
	if !s.IsEmpty() {
		t.Fatalf("RemoveSet(self) = %v", s.String())
	}
}
