//go:build !race

package fuzz

// underRace: see race_on_test.go.
const underRace = false
