// Package ranges holds half-open byte ranges and normalized sets of them: the vocabulary
// every other subarena package uses to say "these bytes".
//
// # Half-open, once and for all
//
// A Range is [Lo, Hi): it holds Lo and every byte up to, but not including, Hi. Its length is
// Hi-Lo; it is empty when Hi <= Lo; [a, b) and [b, c) touch without overlapping, and their
// union is [a, c). Every range in subarena is half-open; nothing in this package or above it
// uses closed intervals (the interval tree the liveness index is built on does, and that
// package converts at its edge).
//
// # Why a sorted run list
//
// A Set is the sorted list of its maximal runs:
//
//	bytes:  0    4    8    12   16   20
//	        [####)    [#########)   [#)
//	runs:   [0, 4)    [8, 16)       [20, 21)
//
// The runs are non-empty, disjoint and non-adjacent (touching runs are always merged), so the
// representation is canonical: two Sets with the same bytes have equal run lists, and Equal
// is a slice comparison. The sets this project handles are the bytes strided views cover:
// a column of a matrix, a third of a fused projection, a block of rows. They are few runs
// (often one), or many runs in a regular pattern that are produced in increasing order. A
// sorted slice suits both: one allocation, cache-friendly scans, O(log n) point queries by
// binary search, O(1) appends in producing order, and O(n+m) merges for the binary
// operations. A balanced tree would make a random single insertion O(log n) instead of
// O(n), at the price of pointer chasing and an allocation per run; no caller needs that.
// A bitmap would make everything proportional to the bytes spanned, not to the runs.
//
// # Costs
//
//   - Contains, ContainsRange, Overlaps: O(log n), no allocation.
//   - Add, Remove: O(log n) to find the place plus a memmove of the runs after it; O(1) when
//     adding at or after the last run. No allocation unless the set must grow.
//   - AddSet, RemoveSet, RetainSet (in place): O(n+m). They merge inside the receiver's own
//     array, so they allocate nothing when its capacity is at least n+m.
//   - Union, Intersect, Subtract, IntersectRange, AlignOut, AlignIn, Clone: one allocation
//     for the result.
//   - OverlapsSet: O(min(n,m) · log max(n,m)), no allocation.
//
// Reset keeps the capacity, so a Set reused as a scratch buffer stops allocating once it has
// grown to its working size.
//
// # Invariants
//
// For every Set, for every i: runs[i].Lo < runs[i].Hi and runs[i].Hi < runs[i+1].Lo.
// CheckInvariants verifies exactly this; tests and fuzz targets call it after every mutation.
// Coordinates are any int64 values (negative ones included); lengths and totals that would
// not fit in an int64 saturate at math.MaxInt64, and Translate refuses, with ErrOverflow, to
// move a bound past the int64 range.
//
// # Ownership
//
// A Set owns its backing array. Runs returns a read-only view of it; copying a Set value
// shares it, so mutate only the original (or take Clone).
package ranges
