// Package check decides whether a plan is safe for a trace, and bounds how small any safe
// arena can be on a given schedule. It reads the subarena-trace/v1 and subarena-plan/v1
// formats through package trace (a trace.Program and a trace.Plan) and links neither the
// Allocator nor the planner: the replay (package trace/replay) and the planner (package
// trace/plan) call it to verify their plans and to measure their runs.
//
// Every byte range here is half-open, [lo, hi), and a plan's offsets are arena bytes, as
// in package trace.
//
// # Checking a plan
//
// Plan decides whether a plan is safe. For every byte x shared by two placed buffers A
// and B, the buffer that lets x go first is found from the step that releases it or
// discards a view covering x (trace.Program.LetGo; bytes held to the end go last; if both
// hold x to the end the plan is unsafe outright). Say A lets x go first. Then every op
// using x through A, by any view chain, must happen-before every op using x through B,
// where happens-before is docs/TRACE.md's relation computed on a sasync.Timeline
// (trace.Order). One op using x through both is allowed only when it is inplace and its
// two views put element i over element i (same element size and the same address for
// every element in row-major order). Bytes no op uses are never in conflict. Each
// Violation names the byte runs, both ops and their engines, the view chain through which
// each reaches the bytes, and the missing edge earlier op -> later op; its Rule is
// ViolationUnordered, ViolationSameOp, ViolationHeld or ViolationTakenOver.
//
// A placed buffer (trace.Plan.Placements) is checked as the view of its host it stands
// for: its uses and its views' uses are mapped onto the footprint (trace.Relayout, through
// a trace.Frame), and the host with the buffers placed over it forms one group whose bytes
// go at the discards of its views and at the group's last release (never, if any of them
// is held), against other buffers exactly as above. Within a group no release orders the
// buffers: each takes its bytes over from the ones used before it. So the host comes
// first and the others follow by first op, and for every byte two of them share, every op
// using it through the earlier one must happen-before every op using it through the later
// one (one inplace op putting element i over element i excepted), and bytes the earlier
// one holds to the end may not be taken over at all (ViolationTakenOver).
//
// A plan that does not fit its trace (trace.CheckPlan) is an error matching trace.ErrPlan;
// an unsafe plan is not an error: the Report says Safe false and lists every violation,
// in a deterministic order (by first byte, then by op names).
//
// # LiveLB
//
// LiveLowerBound computes LiveLB, the lower bound the replay's overhead is measured
// against. Fix a Schedule, the one the replay simulated (each op k runs over [start_k,
// end_k), which no placement changes). A byte x of an alloc buffer B is live over [first,
// last): first is the earliest start of an op using x through B (any view), last the
// latest end of one; if the host still holds x at the end of the trace, last is the end
// of the schedule; and if the last user is an inplace op whose output may take over that
// read (same element layout up to offset, as docs/TRACE.md's inplace allows), last is
// that op's start instead. Bytes no op uses are never live. A granule of B is live at t
// when any of its bytes is, and LiveLB is the maximum over t of the live granules times
// the granule size, summed over buffers. In a safe plan with granule-aligned offsets, two
// granules live at the same time cannot share arena bytes (their users would have to be
// ordered, so one interval would end before the other starts), hence no safe layout that
// gives every buffer an offset needs less than LiveLB on this schedule.
//
// LiveLB assumes that layout: an output takes over its input's bytes only where an
// inplace op reads and writes the same elements up to the offset, as counted above. A
// plan that lays a buffer over a strided footprint of another (trace.Plan.Placements,
// the planner's relayout) is outside it and can be below LiveLB: on ggml-tiny's trace the
// planner's relaid plan needs 241,792 B against LiveLB 297,088 B
// (TestLiveLBBoundsOffsetLayoutsOnly). Such a plan's bound is the planner's
// (plan.Result.LowerBound). It is computed per buffer from elementary
// byte segments and one sweep over time.
//
// # Costs
//
// Let U be the uses and R the byte runs of the uses' footprints and of the buffers' death
// pieces (one per dense use; a strided view has up to trace.CoverBudget). Plan builds the
// trace.Order (O(ops × engines)) and sweeps the pieces of the placed buffers in death
// order against an index of earlier uses by engine and seq: O(R log R), plus one entry
// per violation, whatever the number of buffers sharing each byte; a plan with
// placements adds one Relayout and one Cover per use of a placed buffer. LiveLowerBound
// costs O(R log R). The scale benchmarks (replayed_bench_test.go) measure both on
// generated traces at three sizes.
package check
