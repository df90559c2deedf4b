package testutil

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

// LayoutElements calls fn with the first byte of every element of the layout
// offset + Σ idx[k]·strides[k], in row-major order.
func LayoutElements(offset int64, shape, strides []int64, fn func(addr int64)) {
	EachIndex(shape, func(idx []int64) {
		a := offset
		for k, i := range idx {
			a += i * strides[k]
		}
		fn(a)
	})
}

// LayoutAddrs returns the first byte of every element, in row-major order.
func LayoutAddrs(offset int64, shape, strides []int64) []int64 {
	var out []int64
	LayoutElements(offset, shape, strides, func(a int64) { out = append(out, a) })
	return out
}

// LayoutBytes calls fn with every byte of every element of elem bytes, element
// by element in row-major order; a byte shared by two elements comes
// twice.
func LayoutBytes(offset int64, shape, strides []int64, elem int64, fn func(addr int64)) {
	LayoutElements(offset, shape, strides, func(a int64) {
		for x := a; x < a+elem; x++ {
			fn(x)
		}
	})
}
