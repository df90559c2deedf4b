//go:build invariants

package invariants

// Enabled is set by the invariants build tag: every mutator of the
// Allocator (and of its arena, index and Timeline) checks every invariant
// before it returns and panics on the first one broken, and the planner
// verifies every placement it returns, in production too.
const Enabled = true
