package subarena

import (
	"math"
	"testing"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// TestDenseRunAgrees checks derive's shortcut against the strided package
// on one-dimensional layouts around every edge (empty, one element,
// strides other than the element, negative and huge values, the buffer's
// end): whatever denseRun accepts, Validate accepts, with AppendCover's
// exact cover being that run; and it accepts every in-bounds
// strided.Bytes.
func TestDenseRunAgrees(t *testing.T) {
	vals := []int64{math.MinInt64, -3, -1, 0, 1, 2, 3, 4, 7, 8, 15, 16, 17, math.MaxInt64 / 2, math.MaxInt64}
	sizes := []int64{0, 1, 8, 16, math.MaxInt64}
	accepted := 0
	for _, size := range sizes {
		for _, off := range vals {
			for _, n := range vals {
				for _, elem := range vals {
					for _, stride := range vals {
						l := strided.Layout{Offset: off, Shape: []int64{n}, Strides: []int64{stride}, Elem: elem}
						run, ok := denseRun(&l, size)
						if !ok {
							if elem == 1 && stride == 1 && off >= 0 && n >= 0 && off <= size && n <= size-off {
								t.Fatalf("%v in %d bytes: strided.Bytes within bounds refused", l, size)
							}
							continue
						}
						accepted++
						if err := l.Validate(size); err != nil {
							t.Fatalf("%v in %d bytes: accepted, but Validate says %v", l, size, err)
						}
						var cover ranges.Set
						exact, err := l.AppendCover(&cover, CoverBudget)
						if err != nil || !exact {
							t.Fatalf("%v: AppendCover exact %v, %v", l, exact, err)
						}
						var want []ranges.Range
						if !run.Empty() {
							want = []ranges.Range{run}
						}
						if got := cover.Runs(); len(got) != len(want) || (len(got) == 1 && got[0] != want[0]) {
							t.Fatalf("%v in %d bytes: run %v, AppendCover %v", l, size, run, got)
						}
					}
				}
			}
		}
	}
	if accepted == 0 {
		t.Fatal("no layout accepted")
	}
}
