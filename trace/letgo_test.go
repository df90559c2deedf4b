package trace

import (
	"math/rand/v2"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// TestPaint: paint gives what taking each set's bytes not taken before gives.
func TestPaint(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for i := 0; i < 2000; i++ {
		lo := rng.Int64N(10)
		hi := lo + rng.Int64N(60)
		sets := make([]ranges.Set, rng.IntN(12))
		for j := range sets {
			for k := rng.IntN(5); k > 0; k-- {
				a := rng.Int64N(80) - 5
				sets[j].Add(ranges.Range{Lo: a, Hi: a + 1 + rng.Int64N(12)})
			}
		}
		taken, rest := paint(lo, hi, sets)
		left := ranges.FromRanges(ranges.Range{Lo: lo, Hi: hi})
		for j := range sets {
			want := ranges.Intersect(&left, &sets[j])
			left.RemoveSet(&want)
			if !taken[j].Equal(&want) {
				t.Fatalf("case %d: set %d takes %v, want %v", i, j, taken[j].String(), want.String())
			}
		}
		if !rest.Equal(&left) {
			t.Fatalf("case %d: rest %v, want %v", i, rest.String(), left.String())
		}
	}
}
