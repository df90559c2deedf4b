package ranges

import (
	"iter"
	"math"
	"slices"
	"strings"
)

// Set is a set of bytes held as its normalized runs: sorted, disjoint, non-adjacent,
// non-empty half-open ranges. Every method keeps it normalized, so two Sets holding the same
// bytes have identical runs. The zero value is the empty set, ready to use.
//
// A Set owns its backing array. Copying a Set value shares that array, so a copy must not be
// mutated while the original is still used (and vice versa); take Clone instead. The Sets
// returned by FromRanges, Union, Intersect, Subtract and Clone own fresh arrays.
type Set struct {
	// runs holds the set. Invariant: for every i, runs[i].Lo < runs[i].Hi, and
	// runs[i].Hi < runs[i+1].Lo (strictly: touching runs are always merged).
	runs []Range
}

// FromRanges returns the union of rs. The ranges may be in any order, overlap, touch or be
// empty; rs itself is not modified.
func FromRanges(rs ...Range) Set {
	runs := make([]Range, 0, len(rs))
	for _, r := range rs {
		if r.Lo < r.Hi {
			runs = append(runs, r)
		}
	}
	if !slices.IsSortedFunc(runs, cmpLo) {
		slices.SortFunc(runs, cmpLo)
	}
	return Set{runs: coalesceSorted(runs)}
}

func cmpLo(a, b Range) int {
	switch {
	case a.Lo < b.Lo:
		return -1
	case a.Lo > b.Lo:
		return 1
	}
	return 0
}

// coalesceSorted merges overlapping or touching neighbours of runs (sorted by Lo, all
// non-empty) in place and returns the normalized prefix.
func coalesceSorted(runs []Range) []Range {
	if len(runs) == 0 {
		return runs
	}
	w := 0
	for _, r := range runs[1:] {
		if r.Lo <= runs[w].Hi {
			runs[w].Hi = max(runs[w].Hi, r.Hi)
			continue
		}
		w++
		runs[w] = r
	}
	return runs[:w+1]
}

// firstEndingAfter returns the smallest index i with runs[i].Hi > x, or len(runs).
func firstEndingAfter(runs []Range, x int64) int {
	return firstFrom(runs, 0, func(r Range) bool { return r.Hi > x })
}

// firstFrom returns the smallest index i >= from with past(runs[i]), or
// len(runs); past must be false and then true along runs[from:].
func firstFrom(runs []Range, from int, past func(r Range) bool) int {
	lo, hi := from, len(runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if past(runs[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// firstEndingAtOrAfter returns the smallest index i with runs[i].Hi >= x, or len(runs).
func firstEndingAtOrAfter(runs []Range, x int64) int {
	return firstFrom(runs, 0, func(r Range) bool { return r.Hi >= x })
}

// firstStartingAfter returns the smallest index i >= from with runs[i].Lo > x, or len(runs).
func firstStartingAfter(runs []Range, from int, x int64) int {
	return firstFrom(runs, from, func(r Range) bool { return r.Lo > x })
}

// firstStartingAtOrAfter returns the smallest index i >= from with runs[i].Lo >= x, or len(runs).
func firstStartingAtOrAfter(runs []Range, from int, x int64) int {
	return firstFrom(runs, from, func(r Range) bool { return r.Lo >= x })
}

// Add makes s the union of s and r. Adding after the last run (the order in which a strided
// view's runs are produced) is O(1); elsewhere it is O(log n) plus the move of the runs after
// the insertion point. It allocates only when a new run does not fit in s's capacity.
func (s *Set) Add(r Range) {
	if r.Lo >= r.Hi {
		return
	}
	runs := s.runs
	n := len(runs)
	if n == 0 || r.Lo > runs[n-1].Hi {
		// Appended to s.runs itself, not to the local copy: when it fits,
		// only the length is stored, with no write barrier for the pointer.
		s.runs = append(s.runs, r)
		return
	}
	if r.Lo >= runs[n-1].Lo { // touches or overlaps the last run only
		runs[n-1].Hi = max(runs[n-1].Hi, r.Hi)
		return
	}
	// Runs i..j-1 overlap or touch r: runs[i] is the first with Hi >= r.Lo, runs[j] the
	// first with Lo > r.Hi.
	i := firstEndingAtOrAfter(runs, r.Lo)
	j := firstStartingAfter(runs, i, r.Hi)
	if i == j {
		s.runs = insertAt(runs, i, r)
		return
	}
	runs[i] = Range{min(r.Lo, runs[i].Lo), max(r.Hi, runs[j-1].Hi)}
	s.runs = closeGap(runs, i+1, j)
}

// closeGap deletes runs[from:to], moving the tail only when there is something to delete.
func closeGap(runs []Range, from, to int) []Range {
	if from == to {
		return runs
	}
	return append(runs[:from], runs[to:]...)
}

// insertAt inserts r before runs[i], growing the array only when it is full.
func insertAt(runs []Range, i int, r Range) []Range {
	runs = append(runs, Range{})
	copy(runs[i+1:], runs[i:])
	runs[i] = r
	return runs
}

// Remove makes s the set of bytes of s not in r. It is O(log n) plus the move of the runs
// after r, and allocates only when r splits a run and s is at capacity.
func (s *Set) Remove(r Range) {
	if r.Lo >= r.Hi {
		return
	}
	runs := s.runs
	if len(runs) == 1 && r.Lo <= runs[0].Lo && r.Hi >= runs[0].Hi {
		s.runs = runs[:0] // the one run goes whole: the common last removal
		return
	}
	i := firstEndingAfter(runs, r.Lo)
	j := firstStartingAtOrAfter(runs, i, r.Hi)
	if i == j {
		return
	}
	first, last := runs[i], runs[j-1]
	left := first.Lo < r.Lo
	right := last.Hi > r.Hi
	switch {
	case left && right && j-i == 1:
		runs[i].Hi = r.Lo
		s.runs = insertAt(runs, i+1, Range{r.Hi, last.Hi})
		return
	case left && right:
		runs[i].Hi = r.Lo
		runs[i+1] = Range{r.Hi, last.Hi}
		s.runs = closeGap(runs, i+2, j)
	case left:
		runs[i].Hi = r.Lo
		s.runs = closeGap(runs, i+1, j)
	case right:
		runs[i] = Range{r.Hi, last.Hi}
		s.runs = closeGap(runs, i+1, j)
	default:
		s.runs = closeGap(runs, i, j)
	}
}

// Contains reports whether byte x is in s. O(log n).
func (s *Set) Contains(x int64) bool {
	i := firstEndingAfter(s.runs, x)
	return i < len(s.runs) && s.runs[i].Lo <= x
}

// ContainsRange reports whether every byte of r is in s. An empty r is contained in any set.
func (s *Set) ContainsRange(r Range) bool {
	if r.Lo >= r.Hi {
		return true
	}
	i := firstEndingAfter(s.runs, r.Lo)
	return i < len(s.runs) && s.runs[i].Lo <= r.Lo && s.runs[i].Hi >= r.Hi
}

// Overlaps returns the lowest run of s that shares a byte with r, clipped to r, and true; or
// the zero Range and false when s and r share no byte. O(log n).
func (s *Set) Overlaps(r Range) (Range, bool) {
	if r.Lo >= r.Hi {
		return Range{}, false
	}
	i := firstEndingAfter(s.runs, r.Lo)
	if i < len(s.runs) && s.runs[i].Lo < r.Hi {
		return s.runs[i].Intersect(r), true
	}
	return Range{}, false
}

// AddClipped adds to s the bytes of o that lie in r: O(log n + k) for the k
// runs of o that r meets (a binary search, then those runs), whatever o's
// size. It is s.AddSet of o ∩ {r} without building the intersection.
func (s *Set) AddClipped(o *Set, r Range) {
	if r.Lo >= r.Hi {
		return
	}
	for i := firstEndingAfter(o.runs, r.Lo); i < len(o.runs) && o.runs[i].Lo < r.Hi; i++ {
		s.Add(o.runs[i].Intersect(r))
	}
}

// RunsOverlapping returns the runs of s that share a byte with r, unclipped
// and in increasing order, without copying: O(log n). The slice is a
// read-only view with Runs' rules (valid until the next mutation of s).
func (s *Set) RunsOverlapping(r Range) []Range {
	if r.Lo >= r.Hi {
		return nil
	}
	i := firstEndingAfter(s.runs, r.Lo)
	j := firstStartingAtOrAfter(s.runs, i, r.Hi)
	return s.runs[i:j:j]
}

// OverlapsSet returns the lowest range of bytes shared by s and o (one maximal run of their
// intersection) and true, or the zero Range and false when they share no byte. It walks the
// smaller set and binary-searches the larger: O(min(n, m) · log max(n, m)).
func (s *Set) OverlapsSet(o *Set) (Range, bool) {
	small, large := s, o
	if len(small.runs) > len(large.runs) {
		small, large = large, small
	}
	if len(small.runs) == 0 {
		return Range{}, false
	}
	if sb, lb := small.Bounds(), large.Bounds(); !sb.Overlaps(lb) {
		return Range{}, false
	}
	for _, r := range small.runs {
		if x, ok := large.Overlaps(r); ok {
			return x, true
		}
	}
	return Range{}, false
}

// Len returns the number of bytes in s, saturating at math.MaxInt64.
func (s *Set) Len() int64 {
	var n int64
	for _, r := range s.runs {
		l := r.Len()
		if n > math.MaxInt64-l {
			return math.MaxInt64
		}
		n += l
	}
	return n
}

// NumRuns returns the number of runs of s.
func (s *Set) NumRuns() int { return len(s.runs) }

// Runs returns the runs of s in increasing order without copying. The slice is a read-only
// view, valid until the next mutation of s; its capacity is clipped so that appending to it
// cannot overwrite s. Writing through it breaks s.
func (s *Set) Runs() []Range { return s.runs[:len(s.runs):len(s.runs)] }

// All iterates over the runs of s in increasing order, without allocating. s must not be
// mutated during the iteration.
func (s *Set) All() iter.Seq[Range] {
	return func(yield func(Range) bool) {
		for _, r := range s.runs {
			if !yield(r) {
				return
			}
		}
	}
}

// Bounds returns [first.Lo, last.Hi), the smallest range containing s, or the zero Range
// when s is empty.
func (s *Set) Bounds() Range {
	if len(s.runs) == 0 {
		return Range{}
	}
	return Range{s.runs[0].Lo, s.runs[len(s.runs)-1].Hi}
}

// Clone returns a copy of s that shares no memory with it.
func (s *Set) Clone() Set {
	if len(s.runs) == 0 {
		return Set{}
	}
	return Set{runs: slices.Clone(s.runs)}
}

// Grow makes room for at least n more runs, so that the next n additions after the last
// run do not allocate. A negative n is ignored.
func (s *Set) Grow(n int) {
	if n > 0 {
		s.runs = slices.Grow(s.runs, n)
	}
}

// Init empties s and gives it buf's memory for its runs: the first
// cap(buf) runs need no allocation. It lets a Set live inside a larger
// object with room for its usual runs beside it; buf's contents are
// overwritten, and buf must not be used for anything else while s is.
func (s *Set) Init(buf []Range) { s.runs = buf[:0] }

// Reset empties s and keeps its capacity for reuse.
func (s *Set) Reset() { s.runs = s.runs[:0] }

// Equal reports whether s and o hold the same bytes.
func (s *Set) Equal(o *Set) bool { return slices.Equal(s.runs, o.runs) }

// IsEmpty reports whether s holds no bytes.
func (s *Set) IsEmpty() bool { return len(s.runs) == 0 }

// String formats s as "{[lo, hi), [lo, hi)}"; the empty set is "{}".
func (s *Set) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, r := range s.runs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.String())
	}
	b.WriteByte('}')
	return b.String()
}
