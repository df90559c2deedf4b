//go:build !invariants

package plan

// invariants is set by the invariants build tag (see invariants_on.go).
const invariants = false
