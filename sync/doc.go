// Package sync models the engines of a device, the ops submitted to them,
// and the order between those ops: which op happens-before which, which ops
// have completed, and whether bytes last used by some ops may be handed to
// a writer at a given point. It is the ordering half of subarena's reuse
// rule; the liveness index and the Allocator ask it every question about
// time.
//
// The package shares its name with the standard library's sync on purpose
// (it owns synchronization in this module). Import it under an alias:
//
//	import sasync "github.com/subarena/subarena/sync"
//
// # Terms
//
// An engine is a strictly ordered queue: a compute stream, a copy engine,
// the network, a host thread. Ops on one engine start and complete in
// submission order. Each op is numbered by its engine with a Seq, from 1;
// Seq 0 means "nothing". An Event (engine, seq) is the completion of one
// op.
//
// Op a happens-before op b when a precedes b on one engine, or b was
// submitted waiting for a, or the host synced on a (HostSync) before b was
// submitted, or a chain of these links them. It is a strict partial order.
//
// # Vector clocks
//
// Because each engine is a total order, the set of ops that happen-before
// (or equal) an op is described exactly by one number per engine: the last
// seq of that engine in the set. A Clock is that vector. The clock of op b
// is computed once, at Submit, as the join (component-wise max) of
//
//   - the clock of the previous op on b's engine,
//   - the clocks of the events b waits for,
//   - the host clock: the join of the clocks of every event host-synced so
//     far,
//
// with b's own component set to b's seq. Then "a happens-before b" is
// "a != b and clock(b) covers a": one comparison. The same holds for
// completion: completing an op completes everything that happens-before it
// (engines are FIFO, and an op starts only after what it waits for has
// completed), so the set of completed ops is one Clock too, and Complete is
// one join.
//
// A Clock is a fixed [MaxEngines]Seq array, MaxEngines = 16: joins and
// comparisons are a loop over 16 words with no allocation and no maps, and
// a clock is copied by value wherever it is convenient. Sixteen engines is
// more than any device we model; AddEngine refuses a seventeenth.
//
// # Points and fences
//
// A Point is where the next op on an engine will start, with the clock of
// what happens-before that start: the engine's last op, everything before
// that op (its waits included), and everything host-synced. It does not
// include the waits of ops submitted later: an allocation made for the next
// op cannot count on a wait the program has not issued yet.
//
// A fence is a Clock covering the users that were still pending on some
// bytes when they were released (build it with Clock.Observe for each user
// event). The bytes are safe for point p when every op the fence covers has
// completed or happens-before p:
//
//	for every engine e: fence[e] <= max(p.Clock[e], completed[e])
//
// which is Timeline.SafeFor. Because clocks are closed under
// happens-before, per-component comparison is exact, not an approximation.
//
// # Costs
//
// Submit, Complete, HostSync, HappensBefore, EventClock, Point and SafeFor
// each cost O(MaxEngines) (Submit: times 1+len(waits)), whatever the
// length of the history, and allocate nothing in steady state.
//
// The Timeline keeps the clock of every op it remembers: 128 bytes per op,
// in per-engine chunks of 512 clocks (64 KiB), so looking up an old event
// is a shift and a mask and growing never copies old clocks; one chunk
// allocation per 512 submissions amortizes to 0 allocs/op. Left alone,
// memory grows with every op submitted. Forget bounds it: it forgets every
// completed op (but each engine's last), drops whole chunks of forgotten
// clocks and reuses them for later submissions, so a program that calls it
// now and then runs in bounded memory with no allocation at all. Retain
// does it as ops complete, with no call to remember: Complete forgets, on
// every engine, what completed more than a given number of ops ago, a chunk
// at a time (amortized O(1)); an Allocator turns it on for its Timeline
// (DefaultRetain). Forgetting is lossless for what an allocator asks
// (completion, points, SafeFor; Status of any op; OrderedAfter while the
// op's chunk is kept); it only makes EventClock and HappensBefore about
// forgotten, long-completed ops unanswerable or conservative (see Forget).
// A Timeline used to analyse a whole trace simply never forgets.
//
// # Concurrency
//
// A Timeline is safe for concurrent use: one Mutex guards it, taken by
// queries, Submit, HostSync and Complete for a few comparisons and copies
// each.
// Subscribers (Subscribe) are called after Complete has released the lock,
// on the completing goroutine, and may run concurrently with each other.
//
// The Executor runs real functions on one goroutine per engine, in the
// order the Timeline prescribes, and completes their events; it is how a
// CPU inference program (and the race tests) drive a Timeline for real.
//
// # Invariants
//
// CheckInvariants verifies, for tests and fuzzers: completed[e] <=
// submitted[e]; the clock of op (e, s) has component e equal to s (an
// event's clock covers itself) and covers only submitted ops; clocks are
// monotone along an engine and transitively closed; the completed clock
// and the host clock are closed under happens-before.
//
// # Errors
//
// Bad input — an unknown engine, an event not yet submitted, completing an
// op twice or out of order — returns an error wrapping one of the exported
// sentinels (ErrUnknownEngine, ErrUnknownEvent, ErrAlreadyCompleted,
// ErrForgotten, ...)
// and leaves the Timeline exactly as it was. Nothing in this package
// panics on caller input.
package sync
