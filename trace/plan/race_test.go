//go:build race

package plan

// raceEnabled scales randomized tests down under the race detector, which
// slows this CPU-bound code by an order of magnitude.
const raceEnabled = true
