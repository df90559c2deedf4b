//go:build race

package bench

// raceEnabled: the race detector slows the arena tenfold, so the 10M-pair runs are skipped.
const raceEnabled = true
