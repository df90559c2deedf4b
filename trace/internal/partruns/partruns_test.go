package partruns

import (
	"reflect"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// TestOf: every run of every piece, by Lo.
func TestOf(t *testing.T) {
	sets := []ranges.Set{
		ranges.FromRanges(ranges.Range{Lo: 0, Hi: 4}, ranges.Range{Lo: 16, Hi: 20}),
		ranges.FromRanges(ranges.Range{Lo: 8, Hi: 12}),
		{},
	}
	got := Of(len(sets), func(i int) *ranges.Set { return &sets[i] })
	want := []Run{{ranges.Range{Lo: 0, Hi: 4}, 0}, {ranges.Range{Lo: 8, Hi: 12}, 1}, {ranges.Range{Lo: 16, Hi: 20}, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Of = %v, want %v", got, want)
	}
}
