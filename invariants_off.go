//go:build !invariants

package subarena

// invariants is false without the invariants build tag: the checks cost
// nothing (see invariants_on.go).
const invariants = false
