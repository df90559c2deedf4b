//go:build !race

package testfiles

// RaceEnabled reports whether the race detector is on (see race_on.go).
const RaceEnabled = false
