//go:build !invariants

package bench

// invariantsOn: built with the invariants tag, every arena mutator checks
// every invariant, so the long churn runs are out of reach.
const invariantsOn = false
