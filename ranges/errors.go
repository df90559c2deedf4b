package ranges

import "errors"

// ErrBrokenInvariant is returned (wrapped) by Set.CheckInvariants when a Set is not
// normalized. It always means a bug, in this package or in a caller that wrote through the
// slice Runs returns.
var ErrBrokenInvariant = errors.New("ranges: broken invariant")

// ErrOverflow is returned (wrapped) when an operation would move a bound past the int64 range.
var ErrOverflow = errors.New("ranges: int64 overflow")
