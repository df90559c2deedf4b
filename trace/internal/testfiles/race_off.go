//go:build !race

package testfiles

const raceEnabled = false
