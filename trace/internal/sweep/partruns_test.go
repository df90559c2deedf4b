package sweep

import (
	"reflect"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// TestPartRuns: every run of every piece, by Lo.
func TestPartRuns(t *testing.T) {
	sets := []ranges.Set{
		ranges.FromRanges(ranges.Range{Lo: 0, Hi: 4}, ranges.Range{Lo: 16, Hi: 20}),
		ranges.FromRanges(ranges.Range{Lo: 8, Hi: 12}),
		{},
	}
	got := PartRuns(len(sets), func(i int) *ranges.Set { return &sets[i] })
	want := []PartRun{{ranges.Range{Lo: 0, Hi: 4}, 0}, {ranges.Range{Lo: 8, Hi: 12}, 1}, {ranges.Range{Lo: 16, Hi: 20}, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PartRuns = %v, want %v", got, want)
	}
}
