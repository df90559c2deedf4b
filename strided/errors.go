package strided

import "errors"

// Sentinels. Every error this package returns wraps exactly one of them (test with
// errors.Is) and carries the offending layout or argument in its message.
var (
	// ErrInvalidLayout: the layout is malformed: len(Shape) != len(Strides), Elem <= 0, or a
	// negative dimension.
	ErrInvalidLayout = errors.New("strided: invalid layout")
	// ErrOutOfBounds: a covered byte lies outside [0, bufSize), or a dimension or index
	// argument is outside its range.
	ErrOutOfBounds = errors.New("strided: out of bounds")
	// ErrOverflow: a product or sum the layout implies (element count, extent, a new stride)
	// does not fit in an int64.
	ErrOverflow = errors.New("strided: int64 overflow")
	// ErrNotExpressible: the requested view is not one strided layout over the same bytes
	// (a Reshape that would need a copy).
	ErrNotExpressible = errors.New("strided: not expressible as one strided layout")
	// ErrShapeMismatch: shapes disagree: a Reshape that changes the element count, an Expand
	// of a dimension that is neither 1 nor the target size, Split sizes that do not add up.
	ErrShapeMismatch = errors.New("strided: shape mismatch")
	// ErrInvalidArgument: a builder argument is meaningless whatever the layout: a zero
	// step, a permutation that repeats an axis, a negative size, more than one -1.
	ErrInvalidArgument = errors.New("strided: invalid argument")
)
