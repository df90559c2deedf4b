// Package partruns lays out the pieces of a buffer's partition by address:
// every run of every piece, sorted by Lo, for binary search.
package partruns

import (
	"cmp"
	"slices"

	"github.com/subarena/subarena/ranges"
)

// Run is one run of one piece of a partition.
type Run struct {
	R     ranges.Range
	Piece int
}

// Of returns the runs of the n pieces whose bytes are bytes(i), sorted by Lo.
func Of(n int, bytes func(i int) *ranges.Set) []Run {
	var out []Run
	for i := range n {
		for _, r := range bytes(i).Runs() {
			out = append(out, Run{r, i})
		}
	}
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.R.Lo, b.R.Lo) })
	return out
}
