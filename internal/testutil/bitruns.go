package testutil

import "github.com/bits-and-blooms/bitset"

// BitRuns calls emit with each maximal run [runLo, runHi) of set values of the
// bitmap b over the window [lo, lo+n), in increasing order.
func BitRuns(b *bitset.BitSet, lo, n int64, emit func(runLo, runHi int64)) {
	start, in := int64(0), false
	for x := lo; x < lo+n; x++ {
		set := b.Test(uint(x - lo))
		switch {
		case set && !in:
			start, in = x, true
		case !set && in:
			emit(start, x)
			in = false
		}
	}
	if in {
		emit(start, lo+n)
	}
}
