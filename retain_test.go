package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
	sasync "github.com/subarena/subarena/sync"
)

// TestAllocatorBoundsTimelineHistory: an Allocator turns on its Timeline's
// forgetting as ops complete, so a program that never calls Forget keeps a
// bounded history however many tensors it runs through; a Timeline whose
// forgetting the program set itself keeps its setting.
func TestAllocatorBoundsTimelineHistory(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<16, 256)
	require.Equal(t, sasync.DefaultRetain, tl.Retained())
	const n = 3 * int(sasync.DefaultRetain)
	for range n {
		b := allocAtNext(t, a, e0, 4096)
		w, _ := tl.Submit(e0)
		require.NoError(t, a.UseBuffer(b, w, Write))
		require.NoError(t, a.Release(b))
		require.NoError(t, tl.Complete(w))
	}
	require.GreaterOrEqual(t, tl.Forgotten(e0), sasync.Seq(n)-sasync.DefaultRetain-1024, "completed ops beyond the retained ones are forgotten")
	requireAllReturned(t, a)
	require.NoError(t, a.CheckInvariants())

	own := sasync.NewTimeline()
	own.Retain(10)
	_, err := New(Config{Capacity: 4096, Timeline: own})
	require.NoError(t, err)
	require.Equal(t, sasync.Seq(10), own.Retained())
}
