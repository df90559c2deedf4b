package ranges

import (
	"math"
	"testing"
)

// rangeCase is a Range with what its methods must answer: its length,
// whether it is empty, values it contains and values it does not.
type rangeCase struct {
	name     string
	r        Range
	len      int64
	empty    bool
	contains []int64
	outside  []int64
}

func TestRangeBasics(t *testing.T) {
	cases := []rangeCase{
		{"ordinary", Range{2, 5}, 3, false, []int64{2, 3, 4}, []int64{1, 5}},
		{"empty-equal", Range{7, 7}, 0, true, nil, []int64{7}},
		{"empty-reversed", Range{9, 3}, 0, true, nil, []int64{3, 5, 9}},
		{"negative", Range{-4, -1}, 3, false, []int64{-4, -2}, []int64{-1, -5}},
		{"saturating", Range{math.MinInt64, math.MaxInt64}, math.MaxInt64, false, []int64{0, math.MinInt64}, []int64{math.MaxInt64}},
		{"max-end", Range{math.MaxInt64 - 1, math.MaxInt64}, 1, false, []int64{math.MaxInt64 - 1}, []int64{math.MaxInt64}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Len(); got != c.len {
				t.Errorf("Len = %d, want %d", got, c.len)
			}
			if got := c.r.Empty(); got != c.empty {
				t.Errorf("Empty = %v, want %v", got, c.empty)
			}
			for _, x := range c.contains {
				if !c.r.Contains(x) {
					t.Errorf("Contains(%d) = false", x)
				}
			}
			for _, x := range c.outside {
				if c.r.Contains(x) {
					t.Errorf("Contains(%d) = true", x)
				}
			}
		})
	}
}

func TestRangeIntersectOverlaps(t *testing.T) {
	// a: [2, 6)   ..####..
	cases := []struct {
		a, b Range
		want Range
	}{
		{Range{2, 6}, Range{4, 9}, Range{4, 6}}, // ..####.. / ....##### -> [4, 6)
		{Range{2, 6}, Range{6, 9}, Range{}},     // touching: no shared byte
		{Range{2, 6}, Range{0, 2}, Range{}},
		{Range{2, 6}, Range{3, 4}, Range{3, 4}}, // inside
		{Range{2, 6}, Range{0, 10}, Range{2, 6}},
		{Range{2, 6}, Range{5, 5}, Range{}}, // empty operand
		{Range{5, 2}, Range{0, 10}, Range{}},
	}
	for _, c := range cases {
		for _, swap := range []bool{false, true} {
			a, b := c.a, c.b
			if swap {
				a, b = b, a
			}
			if got := a.Intersect(b); got != c.want {
				t.Errorf("%v ∩ %v = %v, want %v", a, b, got, c.want)
			}
			if got := a.Overlaps(b); got != !c.want.Empty() {
				t.Errorf("%v.Overlaps(%v) = %v", a, b, got)
			}
		}
	}
}

func TestRangeString(t *testing.T) {
	if got := (Range{-3, 12}).String(); got != "[-3, 12)" {
		t.Errorf("String = %q", got)
	}
}
