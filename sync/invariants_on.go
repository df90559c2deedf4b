//go:build invariants

package sync

// invariants is set by the invariants build tag: every mutator checks
// the Timeline's invariants before it returns and panics on the first one
// broken.
const invariants = true
