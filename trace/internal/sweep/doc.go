// Package sweep holds the data structures the trace packages' sweeps over
// steps and addresses share:
//
//   - Heap is a binary min-heap over a slice, ordered by a less function.
//     Elements that compare equal leave in an order fixed by the sequence of
//     pushes and pops, the same on every run (the planner's and the
//     replay's event queues, the trace's release order);
//   - PartRuns lays out the pieces of a buffer's partition by address:
//     every run of every piece, sorted by Lo, for binary search;
//   - Tags folds values over ranges of slots (the checker's live-bytes
//     sweep and the replay's per-piece spans).
package sweep
