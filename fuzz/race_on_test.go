//go:build race

package fuzz

// underRace: the race detector slows the single-goroutine simulator about
// tenfold without telling it anything, so the simulation tests run a
// smaller share under it (the stress test, which is concurrent, does not).
const underRace = true
