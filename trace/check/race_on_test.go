//go:build race

package check

// raceEnabled: the race detector slows replay about tenfold; tests that sweep many
// inputs take a sample under it (the full sweep runs in ordinary builds).
const raceEnabled = true
