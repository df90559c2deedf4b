// Package checked is how the module takes values from its input without
// trusting them.
//
// Sizes and strides: Add, Mul and Product are int64 arithmetic that reports
// overflow instead of wrapping, for the parsers, importers and layout code
// that take sizes and strides from their callers.
//
// Names: Text and XML make names from input files safe to show: on a
// terminal, where a control character (ESC starts a sequence that can
// retitle the window or clear the screen) must not reach the device, and in
// XML (SVG, HTML), where most control characters are not allowed at all and
// make the whole document invalid. Names in subarena's formats are any
// valid UTF-8 (docs/TRACE.md), so a trace may name a buffer
// "a\x1b]0;pwned\x07" or "b\x00". Every report, picture and page that prints
// a name from input passes it through Text or XML. Both write each character
// that is unsafe as a visible Go escape (\x1b, \u202e): C0 and C1 control
// characters, DEL, bidirectional formatting characters (which reorder what
// the reader sees), U+FFFE and U+FFFF (not characters in XML 1.0), and each
// byte of invalid UTF-8. Everything else is left as is, so an ordinary name
// reads the same.
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
