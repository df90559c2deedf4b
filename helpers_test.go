package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
	sasync "github.com/subarena/subarena/sync"
)

// newComputeAllocator returns a new Timeline with one engine, "compute",
// that engine, and an Allocator of the given capacity and granule
// listening to the Timeline.
func newComputeAllocator(t *testing.T, capacity, granule int64) (*sasync.Timeline, sasync.EngineID, *Allocator) {
	t.Helper()
	tl := sasync.NewTimeline()
	e0, err := tl.AddEngine("compute", sasync.Compute)
	require.NoError(t, err)
	a, err := New(Config{Capacity: capacity, Granule: granule, Timeline: tl})
	require.NoError(t, err)
	return tl, e0, a
}

// allocAtNext allocates size bytes for a writer at e's next point.
func allocAtNext(t *testing.T, a *Allocator, e sasync.EngineID, size int64) *Buffer {
	t.Helper()
	pt, err := a.Timeline().Point(e)
	require.NoError(t, err)
	b, err := a.Alloc(size, pt)
	require.NoError(t, err)
	return b
}

// requireAllReturned checks that no byte of the arena is in use or held.
func requireAllReturned(t *testing.T, a *Allocator) {
	t.Helper()
	st := a.Stats()
	require.Zero(t, st.InUse)
	require.Zero(t, st.Held)
}
