//go:build invariants

package subarena

import (
	"testing"

	sasync "github.com/subarena/subarena/sync"
)

// TestMutatorsCheckInvariants: built with the invariants tag, a mutator
// that leaves the Allocator broken panics before it returns.
func TestMutatorsCheckInvariants(t *testing.T) {
	tl := sasync.NewTimeline()
	e, _ := tl.AddEngine("e", sasync.Compute)
	a, err := New(Config{Capacity: 1024, Granule: 16, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tl.Point(e)
	if _, err := a.Alloc(16, p); err != nil {
		t.Fatal(err)
	}
	a.live++ // the live byte count no longer adds up
	defer func() {
		if recover() == nil {
			t.Fatal("Alloc on a broken Allocator did not panic")
		}
	}()
	_, _ = a.Alloc(16, p)
}
