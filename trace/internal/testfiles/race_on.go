//go:build race

package testfiles

// RaceEnabled reports whether the race detector is on: it slows the tests about
// tenfold, so Glob keeps two files of a sweep and tests that sweep many inputs take a
// sample under it (the full sweep runs in ordinary builds).
const RaceEnabled = true
