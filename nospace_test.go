package subarena_test

import (
	"errors"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	sasync "github.com/subarena/subarena/sync"
)

// TestOneNoSpaceError: the Allocator and a bare arena report a failed
// allocation with the same type, which errors.Is matches against both
// packages' ErrNoSpace and errors.As finds under either name, with the
// figures each fills in.
func TestOneNoSpaceError(t *testing.T) {
	tl := sasync.NewTimeline()
	e0, _ := tl.AddEngine("e0", sasync.Compute)
	a, err := subarena.New(subarena.Config{Capacity: 4096, Policy: subarena.SubrangeAfterUsers, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tl.Point(e0)
	b, _ := a.Alloc(4096, p)
	ev, _ := tl.Submit(e0)
	_ = a.UseBuffer(b, ev, subarena.Read)
	_ = a.Release(b)
	p, _ = tl.Point(e0)
	_, allocErr := a.Alloc(1024, p)

	ar, _ := arena.New(arena.Config{Capacity: 4096})
	_, _ = ar.Alloc(1024)
	_, arenaErr := ar.Alloc(4096)

	for _, tc := range []struct {
		name string
		err  error
		want arena.NoSpaceError
	}{
		{"allocator", allocErr, arena.NoSpaceError{Requested: 1024, Held: 4096, Pending: 4096, HasWait: true}},
		{"arena", arenaErr, arena.NoSpaceError{Requested: 4096, TotalFree: 3072, LargestFree: 3072}},
	} {
		if !errors.Is(tc.err, subarena.ErrNoSpace) || !errors.Is(tc.err, arena.ErrNoSpace) {
			t.Fatalf("%s: %v does not match ErrNoSpace", tc.name, tc.err)
		}
		var root *subarena.NoSpaceError
		var low *arena.NoSpaceError
		if !errors.As(tc.err, &root) || !errors.As(tc.err, &low) || root != low {
			t.Fatalf("%s: errors.As does not find one *NoSpaceError in %v", tc.name, tc.err)
		}
		got := *root
		if got.Requested != tc.want.Requested || got.TotalFree != tc.want.TotalFree || got.LargestFree != tc.want.LargestFree ||
			got.Held != tc.want.Held || got.Pending != tc.want.Pending || got.HasWait != tc.want.HasWait {
			t.Fatalf("%s: figures %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
