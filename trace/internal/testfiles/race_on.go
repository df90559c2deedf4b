//go:build race

package testfiles

// raceEnabled: the race detector slows the tests about tenfold, so Glob
// keeps two files of a sweep.
const raceEnabled = true
