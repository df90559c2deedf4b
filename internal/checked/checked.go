// Package checked is int64 arithmetic that reports overflow instead of
// wrapping, for the parsers, importers and layout code that take sizes and
// strides from their callers.
package checked

// Mul returns a*b for a, b >= 0 and whether it fits in an int64.
func Mul(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > (1<<63-1)/b {
		return 0, false
	}
	return a * b, true
}

// Add returns a+b and whether it fits in an int64.
func Add(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// Product returns elem times every dimension of shape, and false when a
// dimension is negative or the product does not fit in an int64 (elem >= 0).
func Product(shape []int64, elem int64) (int64, bool) {
	n := elem
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		var ok bool
		if n, ok = Mul(n, d); !ok {
			return 0, false
		}
	}
	return n, true
}
