//go:build invariants

package liveness

// invariants is set by the invariants build tag: every mutator checks
// the index's invariants before it returns and panics on the first one
// broken.
const invariants = true
