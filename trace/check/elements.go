package check

import (
	"slices"

	"github.com/subarena/subarena/strided"
)

// elementMap is a layout reduced to what decides which element sits at which byte:
// dimensions of size 1 dropped, and an outer dimension merged into the next inner one
// when it continues it (stride_outer = shape_inner × stride_inner). Two layouts have the
// same elementMap exactly when element i of one occupies the bytes of element i of the
// other, for every i in row-major order (trace.Program.SameElements asks this of two refs).
type elementMap struct {
	offset  int64
	shape   []int64
	strides []int64
	elem    int64
	empty   bool
}

func mapOf(l strided.Layout, base int64) elementMap {
	m := elementMap{offset: l.Offset + base, elem: l.Elem}
	for k, d := range l.Shape {
		if d == 0 {
			return elementMap{empty: true}
		}
		if d == 1 {
			continue
		}
		m.shape = append(m.shape, d)
		m.strides = append(m.strides, l.Strides[k])
	}
	// Merge from the inside out: dims k and k+1 merge when stride_k = shape_{k+1} × stride_{k+1}.
	for k := len(m.shape) - 2; k >= 0; k-- {
		if m.strides[k] == m.shape[k+1]*m.strides[k+1] {
			m.shape[k+1] *= m.shape[k]
			m.shape = append(m.shape[:k], m.shape[k+1:]...)
			m.strides = append(m.strides[:k], m.strides[k+1:]...)
		}
	}
	return m
}

func (m elementMap) equal(o elementMap) bool {
	if m.empty || o.empty {
		return m.empty && o.empty
	}
	return m.offset == o.offset && m.elem == o.elem && slices.Equal(m.shape, o.shape) && slices.Equal(m.strides, o.strides)
}
