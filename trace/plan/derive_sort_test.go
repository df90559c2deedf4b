package plan

import (
	"math/rand/v2"
	"slices"
	"testing"
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
