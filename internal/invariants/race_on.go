//go:build race

package invariants

// RaceEnabled reports whether the race detector is on: it slows the tests
// about tenfold, so tests that sweep many inputs take a sample under it
// (the full sweep runs in ordinary builds).
const RaceEnabled = true
