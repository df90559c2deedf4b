package subarena

import (
	"context"
	"errors"
	stdsync "sync"
	"testing"

	"github.com/stretchr/testify/require"
	sasync "github.com/subarena/subarena/sync"
)

// TestWaitForSpace: when the only room is held by a reader still running,
// waitForSpace waits for it and returns once the Allocator has the bytes
// back, so the retry succeeds; with nothing in flight, or only work the
// host may not wait for, it reports false.
func TestWaitForSpace(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 256, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	x := sasync.NewExecutor(tl)
	gate := make(chan struct{})
	var open stdsync.Once
	defer x.Close()
	defer open.Do(func() { close(gate) })
	b := allocAtNext(t, a, e0, 256)
	ev, err := x.Submit(e0, nil, func(context.Context) error { <-gate; return nil })
	require.NoError(t, err)
	require.NoError(t, a.UseBuffer(b, ev, Read))
	require.NoError(t, a.Release(b))
	x.Start(context.Background())

	pt, _ := tl.Point(e1) // not ordered after the reader
	_, err = a.Alloc(256, pt)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	never := func(sasync.EngineID) bool { return false }
	ok, err := waitForSpace(x, ns, never, e0, e1)
	require.NoError(t, err)
	require.False(t, ok, "the only work in flight may not be waited for")

	open.Do(func() { close(gate) })
	ok, err = waitForSpace(x, ns, nil, e0)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, tl.Delivered(ev))
	pt, _ = tl.Point(e1)
	_, err = a.Alloc(256, pt)
	require.NoError(t, err, "the reader's completion reached the Allocator before waitForSpace returned")

	_, err = a.Alloc(256, pt)
	require.True(t, errors.As(err, &ns), "%v", err)
	ok, err = waitForSpace(x, ns, nil, e0)
	require.NoError(t, err)
	require.False(t, ok, "nothing in flight: the live set does not fit")
	require.NoError(t, a.CheckInvariants())
}

// TestAllocWaiting: an allocation that does not fit calls Stalled, waits
// for the reader holding the space and succeeds on its retry; one that
// can never fit returns the NoSpaceError once nothing is left to wait for.
func TestAllocWaiting(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 256, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	x := sasync.NewExecutor(tl)
	defer x.Close()
	x.Start(context.Background())
	gate := make(chan struct{})
	b := allocAtNext(t, a, e0, 256)
	ev, err := x.Submit(e0, nil, func(context.Context) error { <-gate; return nil })
	require.NoError(t, err)
	require.NoError(t, a.UseBuffer(b, ev, Read))
	require.NoError(t, a.Release(b))

	var stalls []int
	var open stdsync.Once
	defer open.Do(func() { close(gate) })
	w := SpaceWait{Executor: x, Engines: []sasync.EngineID{e0, e1}, Stalled: func(attempt int) {
		stalls = append(stalls, attempt)
		open.Do(func() { close(gate) })
	}}
	b, err = a.AllocWaiting(256, e1, w)
	require.NoError(t, err)
	require.Equal(t, []int{0}, stalls, "one stall, then the retry fits")

	stalls = nil
	_, err = a.AllocWaiting(256, e1, w)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	require.Equal(t, []int{0}, stalls)
	require.NoError(t, a.Release(b))
	require.NoError(t, a.CheckInvariants())
}
