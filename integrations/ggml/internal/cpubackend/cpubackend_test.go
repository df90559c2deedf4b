package cpubackend

import (
	"errors"
	"testing"
)

// TestNew starts the release's CPU backend with one thread, with several
// on a pool of its own, and refuses fewer than one thread.
func TestNew(t *testing.T) {
	for _, c := range []struct {
		threads int
		ownPool bool
	}{{1, false}, {2, false}, {2, true}} {
		b, err := New(c.threads, c.ownPool)
		if err != nil {
			t.Fatalf("New(%d, %v): %v", c.threads, c.ownPool, err)
		}
		if b.Handle() == nil {
			t.Fatalf("New(%d, %v): nil backend", c.threads, c.ownPool)
		}
		if (b.pool != nil) != (c.ownPool && c.threads > 1) {
			t.Errorf("New(%d, %v): pool %v", c.threads, c.ownPool, b.pool)
		}
		b.Free()
		b.Free()
		if b.Handle() != nil {
			t.Errorf("Free left the handle set")
		}
	}
	for _, n := range []int{0, -1} {
		if b, err := New(n, false); b != nil || !errors.Is(err, ErrThreads) {
			t.Errorf("New(%d): %v, %v; want ErrThreads", n, b, err)
		}
	}
}
