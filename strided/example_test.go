package strided_test

import (
	"fmt"

	"github.com/subarena/subarena/strided"
)

// A fused QKV projection output [T, 3H] f32 split into Q, K and V by columns: three views
// that interleave row by row but never share a byte.
func ExampleOverlap() {
	const T, H = 4, 8
	qkv, _ := strided.Dense(0, []int64{T, 3 * H}, 4)
	parts, _ := qkv.Split(1, H, H, H)
	q, k := parts[0], parts[1]
	kt, _ := k.Transpose(0, 1) // K^T for the attention scores: the same bytes as K

	fmt.Println(q)
	fmt.Println(k)
	fmt.Println(strided.Overlap(q, k, 0))
	fmt.Println(strided.Overlap(k, kt, 0))
	// Output:
	// {off=0 shape=[4 8] strides=[96 4] elem=4}
	// {off=32 shape=[4 8] strides=[96 4] elem=4}
	// disjoint
	// overlapping
}

func ExampleLayout_Cover() {
	m, _ := strided.Dense(0, []int64{4, 4}, 4) // 4x4 f32 matrix
	col, _ := m.Select(1, 2)                   // column 2: one element per row
	set, exact, _ := col.Cover(0)
	fmt.Println(set.String(), exact)

	// With a budget of 2 runs the cover is a superset: 2 chunks of 2 rows each.
	set, exact, _ = col.Cover(2)
	fmt.Println(set.String(), exact)
	// Output:
	// {[8, 12), [24, 28), [40, 44), [56, 60)} true
	// {[8, 28), [40, 60)} false
}

func ExampleLayout_Validate() {
	v := strided.Layout{Offset: 16, Shape: []int64{4}, Strides: []int64{-4}, Elem: 4}
	fmt.Println(v.Validate(32)) // elements at 16, 12, 8, 4
	v.Offset = 8
	fmt.Println(v.Validate(32)) // the last element would start at -4
	// Output:
	// <nil>
	// strided: layout {off=8 shape=[4] strides=[-4] elem=4} covers [-4, 12), outside [0, 32): strided: out of bounds
}

func ExampleLayout_Reshape() {
	m, _ := strided.Dense(0, []int64{4, 6}, 4)
	r, _ := m.Reshape(2, -1)
	fmt.Println(r)
	t, _ := m.Transpose(0, 1)
	_, err := t.Reshape(24)
	fmt.Println(err != nil)
	// Output:
	// {off=0 shape=[2 12] strides=[48 4] elem=4}
	// true
}

func ExampleLayout_Normalize() {
	m, _ := strided.Dense(0, []int64{2, 3}, 4)
	t, _ := m.Transpose(0, 1)
	fmt.Println(t, "->", t.Normalize())
	col, _ := m.Select(1, 1)
	fmt.Println(col, "->", col.Normalize())
	// Output:
	// {off=0 shape=[3 2] strides=[4 12] elem=4} -> {off=0 shape=[] strides=[] elem=24}
	// {off=4 shape=[2] strides=[12] elem=4} -> {off=4 shape=[2] strides=[12] elem=4}
}
