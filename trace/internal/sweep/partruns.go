package sweep

import (
	"cmp"
	"slices"

	"github.com/subarena/subarena/ranges"
)

// PartRun is one run of one piece of a partition.
type PartRun struct {
	R     ranges.Range
	Piece int
}

// PartRuns returns the runs of the n pieces whose bytes are bytes(i), sorted by Lo.
func PartRuns(n int, bytes func(i int) *ranges.Set) []PartRun {
	var out []PartRun
	for i := range n {
		for _, r := range bytes(i).Runs() {
			out = append(out, PartRun{r, i})
		}
	}
	slices.SortFunc(out, func(a, b PartRun) int { return cmp.Compare(a.R.Lo, b.R.Lo) })
	return out
}
