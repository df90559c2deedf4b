// Package analysis measures where the bytes above LiveLB go when the
// Allocator replays the bench workloads, and evaluates candidate changes
// without touching the Allocator.
//
// The package's API is what the analyze command uses: NewInfo prepares a
// workload's program, PrintBreakdown, PrintIdeas and PrintSweep print the
// measurements, and Options, Completions, Predict and Ideas name what they
// vary. The machinery behind them is unexported.
//
// The shadow allocator is the root package's Allocator rebuilt on the public
// arena, liveness and sync packages with its placement decision open; a
// driver steps it through replay.Run's schedule. With no options the two
// agree offset for offset on every workload, policy and fit (TestMirror).
//
// PrintBreakdown classifies every granule below the high-water mark at each
// placement that raises it, judged at t*, the start of the new buffer's
// first user in the schedule: live for LiveLB then, clean but too
// fragmented (a), released but unsafe with users still to come (b),
// released and safe but unused (c), released and unsafe although every
// pending user had ended by the host's time (d1), by the horizon (d2) or by
// t* (d3), held by the program before its first use (e1) or after its last
// (e2), and unused or rounding (e3).
//
// The candidate changes PrintIdeas compares: placement policies; host
// programs that learn of completions (Completions: polls, waits up to the
// horizon, which delay no op), release at last use, or wait before growth
// (StallOnGrow); and wait-fenced reuse (Options.PredictWait): an alloc may
// take held bytes whose pending users are expected to end before the
// buffer's first op starts, and every op using the buffer then waits for
// them. Every variant that changes the host program is written back as a
// trace whose plan check.Plan accepts (TestHostVariant, TestStallOnGrow,
// TestPredictWait). The ordered lower bound is a lower bound for any safe
// plan of a host program: LiveLB plus what the safety rule's ordering
// forbids.
//
//	go run ./bench/analysis/cmd/analyze [-quick] [-workload W,..]        # breakdown
//	go run ./bench/analysis/cmd/analyze -what ideas [-quick] [-ideas RE]  # candidate changes
//	go run ./bench/analysis/cmd/analyze -what sweep [-seeds N]            # seeds 1..N, quick settings
//	PLANREF=quick go test ./bench/analysis -run PlanReference -v          # offline planner reference
package analysis
