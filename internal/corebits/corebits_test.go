package corebits

import (
	"slices"
	"testing"

	"github.com/bits-and-blooms/bitset"
)

func TestRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		bits []uint
		lo   int64
		want [][2]int64
	}{
		{"empty", nil, 0, nil},
		{"one value", []uint{3}, 0, [][2]int64{{3, 4}}},
		{"runs split by gaps", []uint{0, 1, 2, 5, 7, 8}, 0, [][2]int64{{0, 3}, {5, 6}, {7, 9}}},
		{"run to the window's end", []uint{8, 9}, 0, [][2]int64{{8, 10}}},
		{"negative window", []uint{0, 1, 4}, -5, [][2]int64{{-5, -3}, {-1, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bitset.New(10)
			for _, i := range tc.bits {
				b.Set(i)
			}
			var got [][2]int64
			Runs(b, tc.lo, 10, func(lo, hi int64) { got = append(got, [2]int64{lo, hi}) })
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Runs = %v, want %v", got, tc.want)
			}
		})
	}
}
