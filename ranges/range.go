package ranges

import (
	"fmt"
	"math"
)

// Range is the half-open byte range [Lo, Hi): it holds every x with Lo <= x < Hi.
//
// A Range with Hi <= Lo is empty; every empty Range denotes the same (empty) set of bytes,
// whatever its bounds. Range is a plain value: copy it freely.
type Range struct {
	Lo, Hi int64
}

// Len returns the number of bytes in r: Hi-Lo, or 0 when r is empty. A length that does not
// fit in an int64 (only possible for ranges spanning more than half the int64 line) saturates
// at math.MaxInt64.
func (r Range) Len() int64 {
	if r.Hi <= r.Lo {
		return 0
	}
	n := r.Hi - r.Lo
	if n < 0 { // wrapped: the true length exceeds MaxInt64
		return math.MaxInt64
	}
	return n
}

// Empty reports whether r holds no bytes (Hi <= Lo).
func (r Range) Empty() bool { return r.Hi <= r.Lo }

// Contains reports whether Lo <= x < Hi.
func (r Range) Contains(x int64) bool { return r.Lo <= x && x < r.Hi }

// Overlaps reports whether r and o share at least one byte. Empty ranges overlap nothing.
func (r Range) Overlaps(o Range) bool {
	return r.Lo < r.Hi && o.Lo < o.Hi && r.Lo < o.Hi && o.Lo < r.Hi
}

// Intersect returns the bytes r and o share, or the zero Range{} when they share none.
func (r Range) Intersect(o Range) Range {
	lo, hi := max(r.Lo, o.Lo), min(r.Hi, o.Hi)
	if lo >= hi {
		return Range{}
	}
	return Range{lo, hi}
}

// String formats r as "[lo, hi)".
func (r Range) String() string { return fmt.Sprintf("[%d, %d)", r.Lo, r.Hi) }
