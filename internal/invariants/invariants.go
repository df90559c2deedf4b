// Package invariants is how the module's data structures check themselves:
// the build tags that turn the checks on, and what a check does when it
// finds something broken. Every package reads the tags from here, so one
// flag switches the whole module:
//
//	go test -tags invariants ./...
//
// In a build with the invariants tag (Enabled), a broken invariant panics
// (Hold) at the call that broke it, not at the next check:
//
//   - every mutator of an arena.Arena, a liveness.Index, a sync.Timeline
//     and the Allocator checks its CheckInvariants before it returns;
//   - the planner verifies every placement it returns, as it does in test
//     binaries.
//
// Without the tag the checks are constant-false branches the compiler
// removes, so they cost nothing.
//
// RaceEnabled tells tests that sweep many inputs that the race detector
// is on, which slows single-goroutine code about tenfold, so that they
// can take a sample instead.
package invariants

// Hold panics with err, the first broken invariant a check found, unless
// err is nil: a test then fails at the call that broke something, not at
// the next check.
func Hold(err error) {
	if err != nil {
		panic(err)
	}
}
