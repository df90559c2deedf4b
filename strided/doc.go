// Package strided describes tensor views as strided layouts over a buffer, builds views of
// views, and answers the two questions the allocator asks of a view: exactly which bytes
// does it cover, and does it share a byte with another view.
//
// # Layouts
//
// A Layout is numpy's and PyTorch's strided view, in bytes, relative to its buffer's first
// byte: Offset, Shape (outermost first), Strides (may be negative or zero) and Elem, the
// element size. Element (i_0, …, i_{d-1}) covers the half-open range
//
//	[Offset + Σ i_k·Strides[k], Offset + Σ i_k·Strides[k] + Elem)
//
// and every range in this package is half-open [lo, hi) in that way. The builders (Slice,
// Select, Permute, Transpose, Reshape, Expand, Split, AsStrided) derive a view of a view as
// one new Layout over the same buffer, so a chain of views never has to be walked again:
// the liveness index records the final layout, and the view chain is only documentation.
//
// Validation never panics. Every element count, span, extent and derived stride is computed
// with checked arithmetic; whatever does not fit in an int64 is ErrOverflow. A layout with no
// elements covers nothing and is valid over any buffer.
//
// # Why covered bytes, and why a budget
//
// Subrange liveness pins exactly the bytes a pending user reads, so the allocator needs
// those bytes, not the view's extent. They come as runs: a dense view is one run; the column
// of a 4096x4096 f32 matrix is 4096 runs of 4 bytes, 16 KiB apart; the Q third of a fused
// [T, 3H] projection is T runs of 4H bytes. A view can in principle be billions of runs (a
// column of a huge matrix, a sliding window with a stride that does not divide the element),
// so Cover takes a budget: up to budget runs the answer is exact; beyond it, Cover returns a
// superset of at most budget runs, never a subset, and says so (exact == false). A superset
// only makes the allocator keep a few more bytes pinned; a subset would hand a reader's
// bytes to a writer. DefaultBudget is 4096.
//
// The cover is a ranges.Set, not a granule bitmap. The allocator works in granules (256 B
// by default), and a bitmap of granules would bound the work by the buffer's size instead of
// by the number of runs. But a buffer of 1 GiB is four million granules (512 KiB of bits) for
// a view that may be one run, every operation would be proportional to the buffer, and the
// interval tree above wants ranges anyway. Runs are exact at byte level, cost what the view's
// structure costs, and align to granules in one pass (ranges.Set.AlignOut) when the arena
// needs it.
//
// # The canonical form
//
// Cover, Overlap and Normalize all start from the same normal form of the byte set (see
// Normalize): drop size-1 and stride-0 dimensions, flip negative strides, sort by decreasing
// stride, fold inner dimensions whose copies touch or overlap into one longer run, merge
// dimensions that form one arithmetic progression. A transposed dense matrix becomes one run;
// a column stays one dimension of 4096; Q, K and V become one dimension of T with runs of 4H
// at offsets 0, 4H and 8H. The form is computed on the stack (at most 62 dimensions can have
// size >= 2 when the element count fits in an int64), so Cover and Overlap allocate nothing
// of their own.
//
// A canonical layout is nested when each dimension's stride is at least the extent of the
// block inside it. Every view a dense tensor yields through slicing, selecting, splitting,
// permuting and reshaping is nested. Nested layouts are enumerated in address order straight
// into the destination set (one append per run), and their exact run count is known before
// enumerating, so the budget decision costs nothing. Interleaved layouts (one dimension's
// elements falling between another's, as with strides 3 and 5) are computed by doubling set
// unions, ∪_{i<n}(B + i·s) in log n steps, and exact while the intermediate sets stay small.
//
// # Overlap
//
// Overlap never needs the runs in the common case. Both canonical forms are split along the
// largest stride; only the copies whose extents meet survive. When both views have that
// stride (two views cut from the same rows: Q/K/V thirds, gate/up halves, even/odd
// elements) it recurses once per index difference t = j − i, not per pair, so the interleaved
// case is decided in O(dimensions) with no enumeration at all:
//
//	row stride 12H:  |Q 4H|K 4H|V 4H|Q 4H|K 4H|V 4H| …
//	Q vs K: some t with 4H − 0 + t·12H in (−4H, 4H)?  t·12H in (−8H, 0): none: Disjoint.
//
// When the recursion needs more than 2·budget steps, Overlap compares the two covers
// instead: exact covers give an exact answer, disjoint supersets prove Disjoint, and only
// overlapping supersets give MayOverlap, which callers treat as Overlapping.
//
// # Costs
//
//   - Validate, NumElems, Extent, IsDense, IsContiguous: O(dimensions), no allocation.
//   - Cover: O(runs) for nested layouts (one allocation for the new set; AppendCover into a
//     reused set: none); O(runs · log n) with temporaries for interleaved ones; O(budget)
//     for a superset.
//   - Overlap: O(dimensions) for views cut from the same rows, no allocation; at most
//     2·budget steps for the general lattice search; two covers beyond that.
//   - Builders and Normalize: O(dimensions) plus the new layout's slices.
//
// # Invariants
//
// Layouts are values and carry no invariants of their own beyond well-formedness (see
// Layout), which every entry point checks. Covers are normalized ranges.Sets (their
// CheckInvariants holds), lie inside the layout's Extent, and are supersets of the exact
// bytes whenever exact is false.
package strided
