package ranges

import (
	"fmt"
	"math"
)

// floorMul returns the largest multiple of g that is <= x (g > 0), saturating at MinInt64.
func floorMul(x, g int64) int64 {
	q := x / g
	if x%g != 0 && x < 0 {
		q--
	}
	if q < math.MinInt64/g {
		return math.MinInt64
	}
	return q * g
}

// ceilMul returns the smallest multiple of g that is >= x (g > 0), saturating at MaxInt64.
func ceilMul(x, g int64) int64 {
	q := x / g
	if x%g != 0 && x > 0 {
		q++
	}
	if q > math.MaxInt64/g {
		return math.MaxInt64
	}
	return q * g
}

// AlignOut returns a new Set holding every granule of size g that s touches: each run
// [lo, hi) grows to [floor(lo/g)·g, ceil(hi/g)·g), and runs that come to touch merge.
// The result is always a superset of s. g is normally a power of two, but any g > 0 works;
// g <= 1 returns a clone. Bounds that would pass the int64 limits saturate there.
func (s *Set) AlignOut(g int64) Set {
	if g <= 1 || len(s.runs) == 0 {
		return s.Clone()
	}
	runs := make([]Range, 0, len(s.runs))
	for _, r := range s.runs {
		a := Range{floorMul(r.Lo, g), ceilMul(r.Hi, g)}
		if n := len(runs); n > 0 && a.Lo <= runs[n-1].Hi {
			runs[n-1].Hi = max(runs[n-1].Hi, a.Hi)
			continue
		}
		runs = append(runs, a)
	}
	return Set{runs: runs}
}

// AlignIn returns a new Set holding only the granules of size g that s covers completely:
// each run [lo, hi) shrinks to [ceil(lo/g)·g, floor(hi/g)·g) and vanishes if that is empty.
// The result is always a subset of s. g <= 1 returns a clone.
func (s *Set) AlignIn(g int64) Set {
	if g <= 1 || len(s.runs) == 0 {
		return s.Clone()
	}
	var runs []Range
	for _, r := range s.runs {
		a := Range{ceilMul(r.Lo, g), floorMul(r.Hi, g)}
		if a.Lo < a.Hi && a.Lo >= r.Lo && a.Hi <= r.Hi { // saturation can only widen: drop it
			runs = append(runs, a)
		}
	}
	return Set{runs: runs}
}

// Translate moves every byte of s by d (x becomes x+d) in place. It returns an error
// wrapping ErrOverflow, and leaves s unchanged, if a bound would leave the int64 range.
func (s *Set) Translate(d int64) error {
	if len(s.runs) == 0 || d == 0 {
		return nil
	}
	lo, hi := s.runs[0].Lo, s.runs[len(s.runs)-1].Hi
	if (d > 0 && hi > math.MaxInt64-d) || (d < 0 && lo < math.MinInt64-d) {
		return fmt.Errorf("ranges: translate %v by %d: %w", s.Bounds(), d, ErrOverflow)
	}
	for i := range s.runs {
		s.runs[i].Lo += d
		s.runs[i].Hi += d
	}
	return nil
}

// CheckInvariants returns an error wrapping ErrBrokenInvariant when s is not normalized:
// some run is empty, or two neighbours overlap, touch or are out of order.
func (s *Set) CheckInvariants() error {
	for i, r := range s.runs {
		if r.Lo >= r.Hi {
			return fmt.Errorf("ranges: run %d %v is empty: %w", i, r, ErrBrokenInvariant)
		}
		if i > 0 && s.runs[i-1].Hi >= r.Lo {
			return fmt.Errorf("ranges: runs %d %v and %d %v overlap, touch or are unsorted: %w",
				i-1, s.runs[i-1], i, r, ErrBrokenInvariant)
		}
	}
	return nil
}
