// Package fuzz is subarena's correctness gate: an interleaving simulator
// that runs generated host programs against the real Allocator and checks,
// byte by byte, that no op ever reads a version of its data other than the
// one program order says it must — plus the native Go fuzz targets that
// reach across packages.
//
// # Why a simulator
//
// Premature reuse is a timing bug. An allocator that hands bytes to the
// next writer while a reader behind a view chain is still queued on another
// engine produces a wrong result only when the writer happens to run
// first; peak-address tests and single interleavings miss it. So the
// simulator does not trust any one order: it treats every op as executing
// atomically at the instant it completes — reading its inputs, then writing
// its outputs — and lets a scheduler choose the completion order among all
// orders consistent with FIFO engines, waits and host syncs, interleaved
// with the host's own steps (the Allocator's decisions depend on which
// completions it has seen). Two unordered ops can then complete in either
// order, so any reuse that is not ordered after every earlier user of the
// bytes is exposed by some interleaving.
//
// # Programs
//
// A Program is plain data: buffers (allocated at an engine's point, or
// donated from a view's bytes), views (chains of the API's builders —
// dense roots, slices with positive and negative steps, selects, permutes,
// reshapes, broadcasts with zero strides, splits, arbitrary as_strided
// layouts — each with its composed layout and the bytes it covers,
// enumerated element by element as the slow reference for the Allocator's
// strided cover), ops on 1 to 8 engines with their waits and their reads
// and writes of views, and the host's steps: Alloc, Submit, Release,
// Discard, HostSync, Donate, Claim, Reserve and Cancel. Every byte range is
// half-open, [lo, hi), here as everywhere in subarena.
//
// Generate makes random programs; Builder writes them by hand, and
// FromScenario reads them from scenario files (package fuzz/scenario, the
// format package fuzz/scenario's test and the CLI's scenario command
// read too), through that package's one interpreter with a Builder as its
// Host. Scenarios, the design's regression set, are such files:
// fuzz/scenario/seeds/*.txt, embedded in that package, a "#! hazard"
// directive marking the ones IR order must be caught on; their complete
// lines (there so that TestScenarios can run them against the Allocator)
// are ignored here, since the simulator chooses completion orders itself.
// TestSeedFilesMatchBuilder keeps the Builder versions they replaced and
// checks that the files give the same programs. Validate checks a
// program independently of the generator: references are live, and the
// program is race-free — any two ops touching a common byte of a buffer,
// one writing it, are ordered by happens-before — so every read has exactly
// one expected writer, the last op before it that writes the byte. The
// generator adds the waits race-freedom needs, and (unless told to forget,
// see GenConfig.ForgetOrder) makes every use of a buffer wait for the
// point it was allocated at, as a host using a buffer on another engine
// must; forgotten orders must then be rejected by the Allocator with
// ErrUnordered, never turned into corruption.
//
// # Entry points
//
// Run (RunWith with RunOptions) runs one program under one policy and one
// Scheduler; NewSim prepares a run a caller steps itself. Generate draws a
// program from a GenConfig and a Source — NewRand for a seeded generator,
// NewByteSource for a fuzzer's bytes — with the shapes DefaultConfig,
// SmallConfig (exhaustive mode) and StressConfig (goroutine engines).
// Builder's uses are R, W and RW, and Reserved for a use registered by a
// reservation. Campaign and Explore run many programs under subarena.SafePolicies,
// the four policies that must never fail, and ir-order.
//
// # What a run checks
//
// Run builds a fresh Timeline and Allocator over a []byte backing with a
// small capacity, so reuse is constant; on ErrNoSpace (or ErrPending for a
// donation) the host waits for a completion and retries. Each write stamps
// every byte it covers — a per-byte record of the writing op, and in the
// real backing, through Buffer.Bytes, a hash of op and address — and each
// read checks every byte against its expected writer. A mismatch is a
// Failure with the program, the interleaving as it happened, the byte, the
// reader and its view chain, and the op that overwrote the byte; the
// scheduler's decisions replay it (ReplayScheduler).
//
// After every step the run calls the Allocator's CheckInvariants (arena and
// liveness index included), the Timeline's (every eighth step: it walks the
// whole history) and its own (Sim.CheckInvariants), which compares the
// Allocator with the model: the pending users it indexes (count and bytes),
// the buffers it holds, the completed clock, the stamps against the real
// bytes, and that with nothing pending nothing released is left waiting.
// Oracles check every answer the Allocator gives: a buffer lies inside the
// arena on a granule, disjoint from every byte the program holds, and under
// a safe policy every pending user of its bytes happens-before the point
// (the reuse rule itself); a use is rejected with ErrUnordered exactly when
// the op is not ordered after the fence its buffer came with; a claim or a
// donation must wait exactly when a pending user not ordered before the
// op covers the bytes; each view composes to the expected layout. At the
// end, with every op complete and every buffer released, the arena must be
// whole again.
//
// # Modes and costs
//
// Random mode (Campaign, RandomScheduler) draws a host eagerness and a
// speed per engine — a slow copy engine lags — for each run: about a
// millisecond per run of a 24-op program with every check, dominated by the
// invariant checks. Exhaustive mode (Explore) enumerates every interleaving
// depth first by replaying the program with forced decisions; a replayed
// prefix is not re-checked (runs are deterministic). The count grows
// quickly: a 6-op program has thousands of interleavings, an 8-op one up to
// millions. RunOptions.EagerHost runs Submit and HostSync steps as soon as
// they are next: they commute with completions (a Use pins bytes the
// program holds, which no completion returns; a host sync only orders
// later ops), so no outcome is lost, and the count shrinks severalfold.
//
// Most of those interleavings differ only in where a completion falls
// among the host's steps. Orders mode (ExploreOptions.Orders) enumerates
// completion orders instead: the host takes each step as soon as it can
// (RunOptions.HostFirst), and the scheduler only picks which ready op
// completes next — so every Alloc runs with as many users still pending
// as the order allows. That is every order consistent with FIFO engines,
// waits and host syncs (a test checks it against brute force over
// permutations), or, when the host must wait for space, every order its
// waits allow: at most 8!/(3!·3!·2!) = 560 for 8 ops on 3 engines, a few
// dozen for typical generated programs, milliseconds per program.
// ExploreOptions.Delays adds host timing back in a bounded way: every run
// that deviates from host-first at most k times (a deviation being a
// completion taken while the host could have gone), so that with k = 1
// every host call is also tried having seen one more completion. k = 0 is
// the orders alone; k at least the number of ops is the full enumeration.
// The orders alone already catch ir-order in every hazardous seed scenario.
//
// The unsafe ir-order policy is the proof that the checks can fail: it is
// caught reading wrong versions in every hazardous seed scenario, and in a
// sizeable share of random programs.
//
// # Running it
//
//	go test ./fuzz                                          # CI: scenarios, smoke campaigns, stress
//	go test ./fuzz -run TestRandomLong -long -timeout 0 -v  # 10^6 random programs
//	go test ./fuzz -run TestExhaustiveLong -long -timeout 0 -v
//	go test ./fuzz -run TestExhaustiveOrdersLong -long -timeout 0 -v  # every completion order
//	go test ./fuzz -fuzz=FuzzAllocator                      # coverage-guided
//
// SUBARENA_FUZZ_PROGRAMS, SUBARENA_FUZZ_EXHAUSTIVE, SUBARENA_FUZZ_ORDERS,
// SUBARENA_FUZZ_DELAYS, SUBARENA_FUZZ_MINOPS, SUBARENA_FUZZ_MAXOPS,
// SUBARENA_FUZZ_LIMIT, SUBARENA_FUZZ_SEED and SUBARENA_FUZZ_WORKERS size
// the long runs without the flag (see each test's documentation). TestStressExecutor runs 10^5 generated ops on eight goroutine
// engines (sync.Executor) whose functions write and verify the real bytes
// themselves, under the race detector in CI.
//
// # Invariants of the package's own types
//
// A Program is immutable once built; Sim is single-goroutine and keeps the
// model in step with every call it makes: pins are exactly the uses and
// reservations the Allocator has accepted and not yet seen complete or
// cancelled; stamps change only when an op completes; a buffer's expected
// writers change only when an op that writes it is submitted (a rejected op
// writes nothing).
package fuzz
