//go:build !invariants

package sync

// invariants is false without the invariants build tag: the checks cost
// nothing.
const invariants = false
