//go:build !invariants

package arena

// invariants is false without the invariants build tag: the checks cost
// nothing.
const invariants = false
