package ggmltrace

import (
	"slices"
	"testing"
)

// TestCanInplace walks ggml's in-place rule: the op list first, then the
// layout of every source the planner could pair with the output.
func TestCanInplace(t *testing.T) {
	f32 := func(ne ...int64) Operand {
		o := Operand{Type: "f32", TypeSize: 4, Ne: [4]int64{1, 1, 1, 1}, Own: true}
		copy(o.Ne[:], ne)
		return o
	}
	ext := f32(8, 4)
	ext.Own = false
	f16 := f32(8, 4)
	f16.Type, f16.TypeSize = "f16", 2
	i32 := f32(8, 4)
	i32.Type = "i32"
	for _, c := range []struct {
		name string
		op   string
		srcs []Operand
		want bool
	}{
		{"listed, same layout", "ADD", []Operand{f32(8, 4), f32(8, 4)}, true},
		{"not listed", "MUL_MAT", []Operand{f32(8, 4), f32(8, 4)}, false},
		{"GLU is not in ggml's list", "GLU", []Operand{f32(8, 4), f32(8, 4)}, false},
		{"broadcast source of fewer elements is not a candidate", "MUL", []Operand{f32(8, 4), f32(8)}, true},
		{"same size, other ne", "ADD", []Operand{f32(4, 8), f32(8, 4)}, false},
		{"same bytes per element, other type", "SCALE", []Operand{i32}, false},
		{"other bytes per element: not a candidate", "SCALE", []Operand{f16}, true},
		{"external source with other ne: not a candidate", "ADD", []Operand{f32(8, 4), {Type: "f32", TypeSize: 4, Ne: [4]int64{4, 8, 1, 1}}}, true},
		{"external source alone", "UNARY", []Operand{ext}, true},
		{"no sources", "FILL", nil, true},
	} {
		if got := CanInplace(c.op, f32(8, 4), c.srcs); got != c.want {
			t.Errorf("%s: CanInplace(%s) = %v, want %v", c.name, c.op, got, c.want)
		}
	}
	ops := InPlaceOps()
	if len(ops) != 22 || !slices.Contains(ops, "SOFT_MAX") || slices.Contains(ops, "GLU") {
		t.Errorf("InPlaceOps() = %v", ops)
	}
	for _, op := range ops {
		if !InPlaceOp(op) {
			t.Errorf("InPlaceOp(%s) = false", op)
		}
	}
}
