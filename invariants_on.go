//go:build invariants

package subarena

// invariants is set by the invariants build tag: every mutator of the
// Allocator (and of its arena, index and Timeline) checks every invariant
// before it returns, and panics on the first one broken.
//
//	go test -tags invariants ./...
const invariants = true
