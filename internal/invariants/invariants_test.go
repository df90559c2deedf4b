package invariants

import (
	"errors"
	"testing"
)

func TestHold(t *testing.T) {
	Hold(nil) // holds: no panic
	broken := errors.New("broken")
	defer func() {
		if r := recover(); r != broken {
			t.Fatalf("Hold panicked with %v, want %v", r, broken)
		}
	}()
	Hold(broken)
	t.Fatal("Hold did not panic on a broken invariant")
}
