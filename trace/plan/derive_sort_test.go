package plan

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// TestSortRuns: sortRuns sorts concatenations of ascending runs of any
// number and length (one, many, short ones), as slices.Sort does.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	var tmp []int64
	for iter := range 3000 {
		var xs []int64
		for range rng.IntN(12) {
			run := make([]int64, rng.IntN(30))
			for k := range run {
				run[k] = rng.Int64N(100)
			}
			slices.Sort(run)
			xs = append(xs, run...)
		}
		if iter%7 == 0 {
			rng.Shuffle(len(xs), func(a, b int) { xs[a], xs[b] = xs[b], xs[a] })
		}
		want := slices.Sorted(slices.Values(xs))
		if got := sortRuns(slices.Clone(xs), &tmp); !slices.Equal(got, want) {
			t.Fatalf("iter %d: sortRuns(%v) = %v", iter, xs, got)
		}
	}
}

// TestGallop: gallop finds the first segment at or after an index that
// starts at or after a byte, as a linear scan does.
func TestGallop(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for range 3000 {
		segs := make([]segment, rng.IntN(40))
		lo := int64(0)
		for k := range segs {
			lo += rng.Int64N(4)
			segs[k].lo = lo
		}
		i := rng.IntN(len(segs) + 1)
		x := rng.Int64N(lo + 3)
		want := i
		for want < len(segs) && segs[want].lo < x {
			want++
		}
		if got := gallop(segs, i, x); got != want {
			t.Fatalf("gallop(%v, %d, %d) = %d, want %d", segs, i, x, got, want)
		}
	}
}

// TestOverlap: overlap answers as OverlapsSet on sets of runs of about the
// same number (merged) and of very different numbers (searched).
func TestOverlap(t *testing.T) {
	rng := rand.New(rand.NewPCG(75, 76))
	set := func(n int) ranges.Set {
		var s ranges.Set
		for range n {
			lo := rng.Int64N(2000)
			s.Add(ranges.Range{Lo: lo, Hi: lo + 1 + rng.Int64N(6)})
		}
		return s
	}
	hits := 0
	for iter := range 4000 {
		a, b := set(rng.IntN(60)), set(rng.IntN(60))
		if iter%3 == 0 {
			b = set(rng.IntN(3))
		}
		_, want := a.OverlapsSet(&b)
		if got := overlap(&a, &b); got != want {
			t.Fatalf("overlap(%v, %v) = %v, want %v", a.Runs(), b.Runs(), got, want)
		}
		if want {
			hits++
		}
	}
	if hits < 400 || hits > 3600 {
		t.Fatalf("%d of 4000 pairs overlap: too few cases of one answer", hits)
	}
}
