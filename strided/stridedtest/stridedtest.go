// Package stridedtest is the brute-force oracle of strided layouts that
// tests across the module share. It walks a layout element by element, in
// row-major order, and shares no code with package strided: its cover,
// overlap and relayout arithmetic are checked against this walk. It takes
// a layout as its plain fields (offset, shape, strides and element size)
// and imports nothing, so strided's own tests can use it too.
//
// Layouts given to it must be small: it visits every element.
package stridedtest

// EachIndex calls fn with every index tuple of shape in row-major order
// (the last index varies fastest); not at all when a dimension is 0, once
// with an empty tuple for a scalar. fn must not keep idx.
func EachIndex(shape []int64, fn func(idx []int64)) {
	for _, n := range shape {
		if n <= 0 {
			return
		}
	}
	idx := make([]int64, len(shape))
	for {
		fn(idx)
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// Elements calls fn with the first byte of every element of the layout
// offset + Σ idx[k]·strides[k], in row-major order.
func Elements(offset int64, shape, strides []int64, fn func(addr int64)) {
	EachIndex(shape, func(idx []int64) {
		a := offset
		for k, i := range idx {
			a += i * strides[k]
		}
		fn(a)
	})
}

// ElementAddrs returns the first byte of every element, in row-major order.
func ElementAddrs(offset int64, shape, strides []int64) []int64 {
	var out []int64
	Elements(offset, shape, strides, func(a int64) { out = append(out, a) })
	return out
}

// Bytes calls fn with every byte of every element of elem bytes, element
// by element in row-major order; a byte shared by two elements comes
// twice.
func Bytes(offset int64, shape, strides []int64, elem int64, fn func(addr int64)) {
	Elements(offset, shape, strides, func(a int64) {
		for x := a; x < a+elem; x++ {
			fn(x)
		}
	})
}
