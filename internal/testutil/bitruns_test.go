package testutil

import (
	"slices"
	"testing"

	"github.com/bits-and-blooms/bitset"
)

// runsOf returns the runs Runs finds in a 10-bit window from lo whose set
// bits are bits.
func runsOf(lo int64, bits ...uint) [][2]int64 {
	b := bitset.New(10)
	for _, i := range bits {
		b.Set(i)
	}
	var got [][2]int64
	BitRuns(b, lo, 10, func(lo, hi int64) { got = append(got, [2]int64{lo, hi}) })
	return got
}

func TestBitRuns(t *testing.T) {
	expect := func(what string, got [][2]int64, want ...[2]int64) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: BitRuns = %v, want %v", what, got, want)
		}
	}
	expect("empty", runsOf(0))
	expect("one value", runsOf(0, 3), [2]int64{3, 4})
	expect("runs split by gaps", runsOf(0, 0, 1, 2, 5, 7, 8), [2]int64{0, 3}, [2]int64{5, 6}, [2]int64{7, 9})
	expect("run to the window's end", runsOf(0, 8, 9), [2]int64{8, 10})
	expect("negative window", runsOf(-5, 0, 1, 4), [2]int64{-5, -3}, [2]int64{-1, 0})
}
