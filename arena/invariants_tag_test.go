//go:build invariants

package arena

import "testing"

// TestMutatorsCheckInvariants: built with the invariants tag, a mutator
// that finds the arena broken panics before it returns.
func TestMutatorsCheckInvariants(t *testing.T) {
	a := mustNew(t, Config{Capacity: 1024, Granule: 16})
	a.inUseG++ // the in-use count no longer matches the free regions
	defer func() {
		if recover() == nil {
			t.Fatal("Alloc on a broken arena did not panic")
		}
	}()
	_, _ = a.Alloc(16)
}
