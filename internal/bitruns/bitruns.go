// Package bitruns reads bitmaps that model sets of int64 values, bit i
// standing for the value lo+i: the reference the set and layout tests
// compare against, computed by visiting every value in turn.
package bitruns

import "github.com/bits-and-blooms/bitset"

// Runs calls emit with each maximal run [runLo, runHi) of set values of the
// bitmap b over the window [lo, lo+n), in increasing order.
func Runs(b *bitset.BitSet, lo, n int64, emit func(runLo, runHi int64)) {
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
