package ggmltrace_test

import (
	"math"
	"testing"

	"github.com/subarena/subarena/trace/ggmltrace"
)

func TestDenseStrides(t *testing.T) {
	for _, c := range []struct {
		name       string
		ne, nb     []int64
		blck, size int64
		want       bool
	}{
		{"f32 matrix", []int64{4, 3, 1, 1}, []int64{4, 16, 48, 48}, 1, 4, true},
		{"extent 1 takes any stride", []int64{4, 1, 2, 1}, []int64{4, 999, 16, 7}, 1, 4, true},
		{"transposed", []int64{4, 3, 1, 1}, []int64{12, 4, 48, 48}, 1, 4, false},
		{"padded rows", []int64{4, 3, 1, 1}, []int64{4, 20, 60, 60}, 1, 4, false},
		{"q8_0 rows in blocks", []int64{64, 2, 1, 1}, []int64{34, 68, 136, 136}, 32, 34, true},
		{"q8_0 rows in elements", []int64{64, 2, 1, 1}, []int64{34, 64 * 34, 128 * 34, 128 * 34}, 32, 34, false},
		{"no extents", nil, nil, 1, 4, false},
		{"lengths differ", []int64{4, 3}, []int64{4}, 1, 4, false},
		{"no size", []int64{4}, []int64{0}, 1, 0, false},
		{"overflow", []int64{math.MaxInt64 / 2, 1, 1}, []int64{4, 0, 0}, 1, 4, false},
	} {
		if got := ggmltrace.DenseStrides(c.ne, c.nb, c.blck, c.size); got != c.want {
			t.Errorf("%s: DenseStrides(%v, %v, %d, %d) = %v, want %v", c.name, c.ne, c.nb, c.blck, c.size, got, c.want)
		}
	}
}
