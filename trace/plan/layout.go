package plan

import (
	"slices"

	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
)

// Layout arithmetic for in-place placement. A buffer B written in place over
// a read view R takes R's footprint: element i of B's natural (dense,
// row-major) layout sits on element i of R. When R is itself dense that is
// a plain shift; when R is strided (the gate half of a fused gate/up
// output), B is relaid: its elements follow R's strides, and the plan
// gives B a placement over R's footprint instead of an offset. Every view
// of B must then be re-expressed in R's layout, which is possible exactly
// when the view walks B's elements along B's own dimensions without
// carrying from one dimension into the next.

// sameElements reports whether a and b put element i on the same bytes for
// every i in row-major order (strided.SameElements at their own offsets).
func sameElements(a, b strided.Layout) bool {
	// Two equal layouts (an in-place op's dense read and write, most
	// often) put every element at the same byte without more ado.
	if a.Offset == b.Offset && a.Elem == b.Elem && slices.Equal(a.Shape, b.Shape) && slices.Equal(a.Strides, b.Strides) {
		return true
	}
	return strided.SameElements(a, 0, b, 0)
}

// sameShape reports whether a and b have the same shape once size-1
// dimensions are dropped, and the same element size: the "same-shape,
// same-elem" of an in-place op.
func sameShape(a, b strided.Layout) bool {
	if a.Elem != b.Elem {
		return false
	}
	i, j := 0, 0
	for {
		for i < len(a.Shape) && a.Shape[i] == 1 {
			i++
		}
		for j < len(b.Shape) && b.Shape[j] == 1 {
			j++
		}
		if i == len(a.Shape) || j == len(b.Shape) {
			return i == len(a.Shape) && j == len(b.Shape)
		}
		if a.Shape[i] != b.Shape[j] {
			return false
		}
		i++
		j++
	}
}

// shifted returns l moved by d bytes. The result shares l's shape and
// strides: neither may be modified.
func shifted(l strided.Layout, d int64) strided.Layout {
	l.Offset += d
	return l
}

// relayout maps view v, given relative to buffer B whose natural layout is
// the dense nat, onto B's new placement target (a layout of B's elements
// with nat's shape up to size-1 dimensions, relative to the host buffer):
// trace.Relayout, the rule the checker applies to a plan's placements.
func relayout(v, nat, target strided.Layout) (strided.Layout, bool) {
	return trace.Relayout(v, nat, target)
}
