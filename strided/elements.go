package strided

import "slices"

// SameElements reports whether layouts a and b, their offsets taken from
// bases baseA and baseB (a's element addresses are baseA + a.Offset + ...),
// put element i of one at the address of element i of the other for every
// i in row-major order, with the same element size: the relation an
// in-place op needs between an input and its output. Dimensions of size 1
// do not matter, nor how the elements are grouped into dimensions (a
// dense [4, 8] and a dense [32] are the same); two layouts without
// elements are the same. It does not allocate for layouts of up to four
// dimensions.
func SameElements(a Layout, baseA int64, b Layout, baseB int64) bool {
	var bufA, bufB [8]int64
	shA, stA, emptyA := elementMap(a, bufA[:0])
	shB, stB, emptyB := elementMap(b, bufB[:0])
	if emptyA || emptyB {
		return emptyA && emptyB
	}
	return a.Offset+baseA == b.Offset+baseB && a.Elem == b.Elem &&
		slices.Equal(shA, shB) && slices.Equal(stA, stB)
}

// elementMap reduces l to what decides which element sits at which byte
// (the offset and element size aside): dimensions of size 1 dropped, and an
// outer dimension merged into the next inner one when it continues it
// (stride_outer = shape_inner × stride_inner). Two layouts with the same
// offset and element size have the same map exactly when element i of one
// occupies the bytes of element i of the other. The shape and strides are
// appended to buf (shape first); empty reports a layout without elements.
func elementMap(l Layout, buf []int64) (shape, strides []int64, empty bool) {
	for _, d := range l.Shape {
		if d == 0 {
			return nil, nil, true
		}
	}
	for _, d := range l.Shape {
		if d != 1 {
			buf = append(buf, d)
		}
	}
	n := len(buf)
	for k, d := range l.Shape {
		if d != 1 {
			buf = append(buf, l.Strides[k])
		}
	}
	shape, strides = buf[:n:n], buf[n:]
	// Merge from the inside out: dims k and k+1 merge when stride_k = shape_{k+1} × stride_{k+1}.
	for k := len(shape) - 2; k >= 0; k-- {
		if strides[k] == shape[k+1]*strides[k+1] {
			shape[k+1] *= shape[k]
			shape = append(shape[:k], shape[k+1:]...)
			strides = append(strides[:k], strides[k+1:]...)
		}
	}
	return shape, strides, false
}
