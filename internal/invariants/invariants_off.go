//go:build !invariants

package invariants

// Enabled is false without the invariants build tag: the checks cost
// nothing (see invariants_on.go).
const Enabled = false
