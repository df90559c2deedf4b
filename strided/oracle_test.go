package strided

import (
	"math/rand/v2"

	"github.com/bits-and-blooms/bitset"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/ranges"
)

// The brute-force oracle: enumerate every element of a small layout, in row-major order,
// and every byte of every element. It shares no code with canon, Cover or Overlap.

// elemAddrs returns the first byte of every element in row-major order.
func elemAddrs(l Layout) []int64 { return testutil.LayoutAddrs(l.Offset, l.Shape, l.Strides) }

// oracleBits returns the bytes l covers as a bitmap over [0, size). Every covered byte
// must lie in [0, size).
func oracleBits(l Layout, size int64) *bitset.BitSet {
	b := bitset.New(uint(size))
	for _, a := range elemAddrs(l) {
		for x := a; x < a+l.Elem; x++ {
			if x < 0 || x >= size {
				panic("oracle: byte outside the buffer")
			}
			b.Set(uint(x))
		}
	}
	return b
}

// oracleRuns returns the maximal runs of a bitmap over [0, size)
// (testutil.BitRuns visits every byte).
func oracleRuns(b *bitset.BitSet, size int64) []ranges.Range {
	var runs []ranges.Range
	testutil.BitRuns(b, 0, size, func(lo, hi int64) { runs = append(runs, ranges.Range{Lo: lo, Hi: hi}) })
	return runs
}

// setBits returns the bits of s over [0, size), and false if s holds a byte outside.
func setBits(s *ranges.Set, size int64) (*bitset.BitSet, bool) {
	b := bitset.New(uint(size))
	for r := range s.All() {
		if r.Lo < 0 || r.Hi > size {
			return b, false
		}
		for x := r.Lo; x < r.Hi; x++ {
			b.Set(uint(x))
		}
	}
	return b, true
}

// randLayout returns a small well-formed layout whose bytes all lie in [0, size), and size.
// Strides are often multiples of elem (real tensors), sometimes not (overlapping and
// interleaved views), sometimes negative or zero.
func randLayout(rng *rand.Rand) (Layout, int64) {
	nd := rng.IntN(5)
	elem := int64(1 + rng.IntN(4))
	if rng.IntN(3) == 0 {
		elem = 1
	}
	l := Layout{Shape: make([]int64, nd), Strides: make([]int64, nd), Elem: elem}
	for k := range nd {
		l.Shape[k] = int64(rng.IntN(6))
		if rng.IntN(8) == 0 {
			l.Shape[k] = 1
		}
		if rng.IntN(12) == 0 {
			l.Shape[k] = 0
		}
		switch rng.IntN(4) {
		case 0:
			l.Strides[k] = int64(rng.IntN(25) - 12)
		default:
			l.Strides[k] = elem * int64(rng.IntN(13)-4)
		}
	}
	if rng.IntN(4) == 0 { // a dense tensor, possibly permuted below
		d, _ := Dense(0, l.Shape, elem)
		l.Strides = d.Strides
		if nd > 1 {
			rng.Shuffle(nd, func(i, j int) {
				l.Shape[i], l.Shape[j] = l.Shape[j], l.Shape[i]
				l.Strides[i], l.Strides[j] = l.Strides[j], l.Strides[i]
			})
		}
	}
	var neg, pos int64
	for k, n := range l.Shape {
		if n == 0 {
			continue
		}
		if s := l.Strides[k]; s < 0 {
			neg += (n - 1) * s
		} else {
			pos += (n - 1) * s
		}
	}
	l.Offset = -neg + int64(rng.IntN(6))
	return l, l.Offset + pos + elem + int64(rng.IntN(4))
}

// randLayoutIn returns a layout covering bytes in [0, size), shifting one from randLayout.
func randLayoutIn(rng *rand.Rand, size int64) (Layout, bool) {
	for range 20 {
		l, need := randLayout(rng)
		if need <= size {
			l.Offset += rng.Int64N(size - need + 1)
			return l, true
		}
	}
	return Layout{}, false
}
