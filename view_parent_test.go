package subarena

import (
	"testing"

	"github.com/subarena/subarena/strided"
)

// TestViewParent checks Parent along a chain: nil for the Whole view, the
// Whole view for a view of the buffer (which keeps no pointer to it), and
// the view it was taken from further down.
func TestViewParent(t *testing.T) {
	_, e, a := newComputeAllocator(t, 1<<16, 0)
	b := allocAtNext(t, a, e, 4096)
	v1, err := b.View(strided.Bytes(0, 2048))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := v1.View(strided.Bytes(0, 1024))
	if err != nil {
		t.Fatal(err)
	}
	v3, err := v2.Slice(0, 0, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Whole().Parent(); p != nil {
		t.Errorf("the Whole view's parent is %v, want nil", p)
	}
	for _, c := range []struct {
		v, want *View
	}{{v1, b.Whole()}, {v2, v1}, {v3, v2}} {
		if got := c.v.Parent(); got != c.want {
			t.Errorf("parent of the view of depth %d is %p, want %p", c.v.Depth(), got, c.want)
		}
	}
	var none *View
	if none.Parent() != nil {
		t.Error("a nil View has a parent")
	}
}
