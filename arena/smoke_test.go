package arena

import (
	"errors"
	"testing"
)

func TestSmoke(t *testing.T) {
	a, err := New(Config{Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Alloc(1000)
	if err != nil || b.Size != 1024 || b.Offset != 0 {
		t.Fatal(b, err)
	}
	if err := a.Free(256, 256); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(256, 256); !errors.Is(err, ErrNotAllocated) {
		t.Fatal(err)
	}
	if _, err := a.Alloc(8192); !errors.Is(err, ErrNoSpace) {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
