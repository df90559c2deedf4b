// Package replay runs a trace's host program against the real Allocator (package
// subarena) and measures what the Allocator did: the arena it needed, how far that is
// from what any safe allocator needs on the same schedule, and when every byte was held.
//
// # What a replay is
//
// A subarena-trace/v1 trace (package trace) is what a host program issues: buffers,
// views, ops submitted to engines, releases and syncs. Run plays it as that host would,
// against an Allocator in Unbounded mode under one of the release policies, and
// simulates the engines with discrete events: ops on one engine run first in, first out;
// an op starts when its engine's previous op and every op it waits for have completed,
// and not before the host submitted it, and runs for its cost. The host issues every step
// at once and waits only at a sync, so the Allocator learns of completions only there
// (the synced op and everything that happens-before it) and at the end of the trace; a
// trace without syncs shows what the after-users policies cost a host that runs ahead.
// Each alloc takes bytes at its allocation point, narrowed when needed to what every user
// of the buffer happens-after; each op's uses pin exactly their views' bytes until it
// completes; releases and discards hand bytes back under the policy; an inplace op's
// output may take over the bytes of a dying input (donation, see Run).
//
// # What it measures
//
// A Result carries the high-water mark (HWM, the arena the run needed), the plan the
// Allocator made (every alloc buffer's offset), LiveLB, the overhead HWM / LiveLB - 1,
// the peak of pending bytes, how many allocations were handed bytes whose previous users
// had not completed (fenced hand-overs), the donations, the makespan, and per-step,
// per-op and per-buffer records for timelines and for Perfetto (WritePerfetto, one
// simulated cost unit drawn as PerfettoUnit trace microseconds). LiveLB
// (check.LiveLowerBound) is computed on the schedule the replay simulated: no safe
// allocator that places buffers at offsets, online or offline, needs a smaller arena
// for it (a plan laying buffers over strided footprints can: see package trace/check). The buffers' lifetimes are
// cut where trace.Program.LetGo cuts them: each piece is the bytes one release or discard
// lets go.
//
// # The replay and the checker
//
// The replay makes reuse decisions; the checker (check.Plan) judges them. Every reuse the
// Allocator makes rests on docs/TRACE.md's happens-before, which is what check.Plan verifies,
// so the plan of a safe policy passes check.Plan and the ir-order baseline's plans show what
// an unsafe allocator gets wrong. Donation follows the checker's own rule: of two buffers
// sharing a byte, the one that lets it go first (trace.Program.LetGo) must be used first,
// and the output placed over its input must put element i over element i
// (trace.Program.SameElements). Online gives the planner (package trace/plan) the
// replay's plan to compare with, so the planner itself does not link the Allocator.
//
// # Costs
//
// Run makes one Allocator or Timeline call per step and use (what those cost is the root
// package's; Options.TimeAllocator measures it), narrows each alloc's point in
// O(uses × engines), records a Stats snapshot per step, and after the last step counts
// fenced hand-overs with a range-max index, O(R log R) for the R byte runs of the uses'
// footprints, and computes LiveLB and the pieces' lifetimes, O(R log R) each. Donation
// planning costs, per inplace first writer, the uses of each candidate input and the
// product of the two buffers' pieces.
package replay
