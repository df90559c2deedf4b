//go:build invariants

package plan

// invariants is set by the invariants build tag: Solve verifies every
// placement it returns, in production too.
const invariants = true
