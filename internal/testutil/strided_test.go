package testutil_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
)

func TestLayoutAddrs(t *testing.T) {
	cases := []struct {
		off           int64
		shape, stride []int64
		want          []int64
	}{
		{0, nil, nil, []int64{0}},                                        // a scalar: one element
		{5, []int64{3}, []int64{4}, []int64{5, 9, 13}},                   // a row
		{0, []int64{2, 3}, []int64{12, 4}, []int64{0, 4, 8, 12, 16, 20}}, // row-major: last index fastest
		{0, []int64{3, 2}, []int64{4, 12}, []int64{0, 12, 4, 16, 8, 20}}, // its transpose
		{100, []int64{2, 2}, []int64{-8, 0}, []int64{100, 100, 92, 92}},  // negative and zero strides
		{0, []int64{2, 0, 3}, []int64{1, 1, 1}, nil},                     // an empty dimension
	}
	for _, c := range cases {
		if got := testutil.LayoutAddrs(c.off, c.shape, c.stride); !slices.Equal(got, c.want) {
			t.Errorf("LayoutAddrs(%d, %v, %v) = %v, want %v", c.off, c.shape, c.stride, got, c.want)
		}
	}
	var bytes []int64
	testutil.LayoutBytes(10, []int64{2}, []int64{3}, 2, func(a int64) { bytes = append(bytes, a) })
	if want := []int64{10, 11, 13, 14}; !slices.Equal(bytes, want) {
		t.Errorf("LayoutBytes = %v, want %v", bytes, want)
	}
}

func ExampleLayoutElements() {
	// The columns of a 2x3 row-major matrix of 4-byte elements, read as
	// a 3x2 view: shape [3 2], strides [4 12].
	testutil.LayoutElements(0, []int64{3, 2}, []int64{4, 12}, func(a int64) { fmt.Print(a, " ") })
	fmt.Println()
	// Output: 0 12 4 16 8 20
}
