package liveness

import (
	"math/rand/v2"
	"testing"

	"github.com/bits-and-blooms/bitset"
)

// TestCoverageAgainstBitmap adds and removes random runs and compares the
// covered byte count with a per-byte count kept in a slice and a bitmap of
// covered bytes, after every step.
func TestCoverageAgainstBitmap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 200; round++ {
		var c coverage
		limit := int64(1 + rng.IntN(3000))
		counts := make([]int, limit)
		type run struct{ lo, hi int64 }
		var added []run
		for step := 0; step < 300; step++ {
			if len(added) > 0 && rng.IntN(2) == 0 {
				i := rng.IntN(len(added))
				r := added[i]
				added[i] = added[len(added)-1]
				added = added[:len(added)-1]
				if !c.add(r.lo, r.hi, -1) {
					t.Fatalf("round %d step %d: removing %v refused", round, step, r)
				}
				for x := r.lo; x < r.hi; x++ {
					counts[x]--
				}
			} else {
				lo := rng.Int64N(limit)
				hi := lo + 1 + rng.Int64N(limit-lo)
				if !c.add(lo, hi, +1) {
					t.Fatalf("adding [%d,%d) refused", lo, hi)
				}
				added = append(added, run{lo, hi})
				for x := lo; x < hi; x++ {
					counts[x]++
				}
			}
			var bits bitset.BitSet
			for x, n := range counts {
				if n > 0 {
					bits.Set(uint(x))
				}
			}
			if got, want := c.Covered(), int64(bits.Count()); got != want {
				t.Fatalf("round %d step %d: covered %d, want %d", round, step, got, want)
			}
		}
	}
}

// TestCoverageRefusesUnderflow: removing what was never added changes
// nothing and says so.
func TestCoverageRefusesUnderflow(t *testing.T) {
	var c coverage
	if c.add(0, 10, -1) {
		t.Fatal("removal from an empty tree accepted")
	}
	c.add(0, 10, +1)
	for _, r := range [][2]int64{{0, 11}, {5, 20}, {100, 200}, {0, 5}} {
		if c.add(r[0], r[1], -1) {
			t.Fatalf("removal of %v accepted after adding [0,10)", r)
		}
		if c.Covered() != 10 {
			t.Fatalf("a refused removal changed the count: %d", c.Covered())
		}
	}
	if !c.add(0, 10, -1) || c.Covered() != 0 || c.size() != 0 {
		t.Fatalf("matching removal: covered %d, %d nodes", c.Covered(), c.size())
	}
}
