// Package subarena is a drop-in allocator for inference engines: it hands
// out tensor memory from one arena and takes it back subrange by subrange,
// as soon as reuse is provably safe.
//
// # The reuse rule
//
// Bytes may be handed to a writer at point P only if every user of those
// bytes under their previous owner has completed or happens-before P —
// never by program order. Three facts of inference engines make this hard:
//
//   - Views hide readers. A reshape, permute, slice or split issues no
//     command, yet the op at the end of the chain reads the original bytes.
//     subarena composes every view into one strided layout over its buffer
//     (package strided) and pins exactly the bytes each op's view covers.
//   - Completion is not program order. Ops run on several engines (package
//     sync: compute queues, copy engines, the network, host threads). A use
//     pins its bytes until its event completes, and a fence — the join of the
//     pending users' events — says which writers are ordered after them.
//   - Parts of a buffer die at different times. Q, K and V views of a fused
//     projection stop being read at different moments; subarena indexes
//     pending users in an interval tree (package liveness) and returns each
//     subrange when its own users are done.
//
// # Data flow
//
//	buf, _ := a.Alloc(size, point)      // bytes safe for a writer at point
//	q, _ := buf.View(layout)            // metadata only, validated
//	a.Use(q, ev, subarena.Read)         // the op behind ev pins q's bytes
//	a.Release(buf)                      // bytes return piece by piece
//	timeline.Complete(ev)               // from any goroutine: pieces return
//
// Discard(view) returns just a view's bytes while the rest stays held;
// Donate(view, ev) hands a dying view's bytes to the output of the op that
// reads them last (in-place). Claim takes bytes for eviction atomically;
// Reserve pins bytes for an op not yet submitted.
//
// # Policies
//
// One option chooses when released bytes return (see Policy): whole buffer
// or by subrange, after the users complete or at once with a fence. The
// default, SubrangeFenced, returns each subrange at once with its own
// fence: a writer ordered after the subrange's users may take it before they
// complete, and it becomes clean — and coalesces in the arena — when they do.
// Under the fenced policies Alloc takes such held bytes before clean ones,
// at the lowest address where the new buffer reaches them; the arena's fit
// strategy (Config.Fit) chooses only when none can be reached. IROrder
// ignores users; it is the premature-reuse bug, kept as a baseline
// for the checkers to catch.
//
// # Concurrency and cost
//
// An Allocator is safe for concurrent use: one mutex guards its state, and
// completions arrive through the Timeline's subscription from any goroutine.
// Alloc costs one arena operation (O(1)) plus, under the fenced policies, a
// scan of held runs; Use and completion cost O(log n) per covered run in the
// interval tree. A view's covered bytes are computed once, on its first use.
package subarena
