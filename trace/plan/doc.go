// Package plan is subarena's offline planner. When a whole graph is known
// ahead — a compiler, or an engine that plans once and replays, as
// ggml-alloc does with reserve — the planner knows every future use of
// every buffer and gives each one fixed offset in one arena, far lower
// than any online allocator can, and provably safe.
//
// # Two layers
//
// The solver core knows nothing of traces. A Problem is a set of Items,
// each with a Size and Pieces: occupancy rectangles, a byte range [Lo, Hi)
// of the item live during a time window [Start, End). Every range in this
// package is half-open, bytes and times alike. Two pieces of different
// items conflict — their placed bytes must be disjoint — when their windows
// intersect, or when the problem lists them as Concurrent:
//
//	bytes ^         +-------+           item A: one piece, whole-buffer life
//	      |  +------|-+ B   |           item B: two pieces; its upper bytes
//	      |  |  A   | +-----+                   die early, so C may take them
//	      |  +------|-+  +-----+  C             once both windows have passed
//	      +----------------------> time
//
// Time is any linear order consistent with happens-before (for a trace,
// the op submission order). With one engine that order is happens-before;
// with several, two windows that are disjoint in it may still belong to
// unordered ops, and the trace layer lists such pairs as Concurrent. Solve
// places a Problem; Verify checks a placement against the Problem as given
// (not the solver's compiled form), and LowerBound gives the most bytes
// live at once, the height nothing beats.
//
// The trace layer (Plan, PlanProgram, PlanMiniMalloc) derives a Problem
// from a subarena-trace/v1 trace, solves it, and returns a trace.Plan that
// passes check.Plan. Given the online replay (Options.Replay; the
// Allocator's is replay.Online, package trace/replay, which this package
// does not link), it never returns a plan higher than the replay's: it
// replays the trace too and keeps the lower safe plan. Every plan comes
// with its lower bound: the replay's plan with the replay's (LiveLB), or
// the planner's when the trace has no inplace op, and it is proven when it
// reaches it (Result.LowerBound). Result is the planner's answer alone: the
// replay's own figures stay with the caller that passed it (replay.Watch).
//
// # Lifetimes from a trace
//
// Each byte of a buffer lives from the first op that uses it (through any
// view) to one past the last, and at least until the step that lets it go:
// the discard of a view covering it, or its buffer's release. That second
// bound is the checker's rule: of two buffers sharing a byte, the one that
// lets it go first must have all its uses of it happen-before all the
// other's. Bytes first read rather than written were filled by the host and
// live from the allocation point; bytes held to the end never share; bytes
// no op uses are free. A buffer thus becomes several pieces when views are
// discarded at different times, or when other buffers are placed in place
// over parts of it.
//
// On one engine the second bound is relaxed to what the rule needs: a byte
// dead before its buffer lets it go (a fused qkv whose K and V rows were
// copied out while Q is still to be read) keeps a window to its last use
// only, and the problem lists as Concurrent the pieces that start in that
// tail yet would be let go no later than it; any other buffer may take the
// byte over before its holder releases it. A tail that would need many such
// pairs keeps the longer window instead. This is what lets a plan reach the
// subrange bound of a graph whose buffers die row by row.
//
// # In-place placement
//
// For an op marked inplace that first writes a whole buffer B and reads a
// view R of another buffer with B's shape and element size, B may take R's
// bytes if they die at that op: every other use of them happens-before it,
// and every later use of B comes after it. If R is dense, B stays a buffer
// with an offset fixed relative to R's owner (the plan format's one offset
// per buffer suffices; the checker sees element i written over element i).
// If R is strided — the gate half of a fused gate/up product — no single
// offset puts B's dense layout on R's bytes, so the plan gives B a
// placement (trace.Placement) over R's footprint in R's owner instead of an
// offset. The checker treats B as a view of the owner with R's layout:
// every view of B is re-expressed in that layout (which must be possible
// without carrying from one of B's dimensions into the next), the owner's
// group is released with the last of it, and within the group every use of
// the bytes before B must happen-before every use through B; B is not
// placed over bytes a buffer of the group holds to the end. Result.Relaid
// names the buffers with placements; the plan checks against the trace as
// given. A buffer and its in-place members form one item.
//
// # Reordering
//
// The plan is for the trace's op order, but on one engine many orders
// compute the same thing. Reorder permutes the ops by list scheduling:
// among the ops whose predecessors (OpDependencies) have all run (the ops they wait on, and
// every earlier op using overlapping bytes of one buffer when one of the
// two writes them) it runs the one a ReorderRule prefers, under a model
// that counts each buffer live, whole, from its first use to its last: the
// one growing the live bytes least (ReorderNet), raising the running peak
// least (ReorderPeak) or freeing most (ReorderFree). Allocs, views,
// releases, discards and syncs follow their ops; buffers the host fills
// stay allocated first. PlanReordered plans the input order and the
// reordering of each rule and keeps the best of them only when neither
// its bound nor its plan is above the input order's (Reordered.Fixed and
// Reordered.Best report both, Reordered.Chosen the one to use), so it is
// never worse. A trace of several engines is not reordered
// (Reordered.Skipped). OrderBound (Reordered.OrderBound) is a height no plan of any such order is below: at
// each op, the bytes it uses plus every byte that an op before it in every
// order and one after it in every order both use; a plan that meets it
// cannot be lowered by reordering.
//
// # Search
//
// The best of twelve greedy placements (six orders: size, area, lifetime,
// conflict, busiest section, start; two fits: lowest offset, tightest gap)
// gives a plan within microseconds of compiling the problem. Within the
// budget a search then lowers it, after MiniMalloc (Moffitt, ASPLOS '23):
// decision searches at fixed capacities over canonical placements (each
// item at its lowest feasible offset, offsets non-decreasing), pruned by
// section inference (in each time section, the floor plus the unplaced live
// bytes must fit), by dominance (never leave a gap an unplaced item fits
// in) and by hatless items (an item no unplaced one conflicts with fits
// anywhere later), split at section boundaries no unplaced item crosses,
// and restarted round-robin over six preorders (DefaultHeuristics) with
// doubling node limits.
// Two searches share the budget: one asks for the lower bound itself
// (perfect packings are rigid, and section inference finds them fast); the
// other bisects between the lower bound and the best height, widening its
// window again after timeouts, because a capacity's difficulty varies
// erratically. For whole-buffer problems the search is complete: a failed
// exhaustive search proves the capacity infeasible (Solution.Proven).
//
// # Costs
//
// Deriving the problem costs O((R + S) log S) for the R runs of the uses'
// footprints and the S byte segments they cut the items into; with several
// engines the concurrent pairs are found by a sweep over the pieces' clocks,
// O(P log P) for P pieces plus the pairs listed. Compiling normalizes each
// item's pieces into runs in O((P + Q) log P) for Q pieces out, and builds
// the conflict graph in O(P log P + E R) for E conflicting item pairs and R
// forbidden intervals per pair: a trace holding n buffers live at once (one
// op reading them all) has n²/2 pairs. A greedy pass is O(n E log E); Verify
// is O(P log P). Before listing the concurrent pairs of a multi-engine
// problem, derive bounds their number in O(P log P) by stretching each
// piece's window to the time from which every later piece is ordered after
// it; a problem that may have more than 16 pairs per piece (and 2^18) is
// dense and placed by a sweep in time over an arena instead, O(P log P) time
// and O(P) memory, with no pair listed and no search (dense.go): a copy
// engine nothing waits for makes every pair of buffers conflict, and listing
// them took memory quadratic in the trace. A search node costs O(degree +
// sections) and allocates
// nothing; the ordering stack is O(n x depth) int32s in the worst case.
// With a budget, Plan runs the online replay (Options.Replay) and the
// check of its plan beside the planner and abandons them when the budget
// ends, so the budget bounds the call whatever the replay costs; the
// planner's own work before the search and the final check are not cut
// short.
//
// # Invariants
//
// Every returned placement has passed Verify (in test binaries and under the
// invariants build tag; production builds skip it). Every plan Plan returns
// that is the online replay's has passed check.Plan; the planner's own plan
// has when Options.Check (the tests set it) or under the invariants build
// tag, and production callers, whose plans pass by construction, skip that
// cost. The searcher and the greedy
// scratch state have CheckInvariants methods that recompute their
// incremental state from scratch; the property tests run them after every
// step and compare the solver with brute-force optima, the byte-time grid
// oracle and the checker (package trace/check).
package plan
