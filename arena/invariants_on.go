//go:build invariants

package arena

// invariants is set by the invariants build tag: every mutator checks
// the arena's invariants before it returns and panics on the first one
// broken.
const invariants = true
