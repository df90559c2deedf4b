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

	seen := tl.DeliveredClock()
	pt, _ := tl.Point(e1) // not ordered after the reader
	_, err = a.Alloc(256, pt)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	never := func(sasync.EngineID) bool { return false }
	ok, err := waitForSpace(x, ns, never, &seen, e0, e1)
	require.NoError(t, err)
	require.False(t, ok, "the only work in flight may not be waited for")

	open.Do(func() { close(gate) })
	ok, err = waitForSpace(x, ns, nil, &seen, e0)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, tl.Delivered(ev))
	pt, _ = tl.Point(e1)
	_, err = a.Alloc(256, pt)
	require.NoError(t, err, "the reader's completion reached the Allocator before waitForSpace returned")

	seen = tl.DeliveredClock()
	_, err = a.Alloc(256, pt)
	require.True(t, errors.As(err, &ns), "%v", err)
	ok, err = waitForSpace(x, ns, nil, &seen, e0)
	require.NoError(t, err)
	require.False(t, ok, "nothing in flight: the live set does not fit")
	require.NoError(t, a.CheckInvariants())
}

// TestWaitForSpaceDeliveredSince: work the host may not wait for that
// completes between the failed allocation and the wait has already given
// its bytes back, so waitForSpace reports that a retry may succeed, and
// the retry does.
func TestWaitForSpaceDeliveredSince(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 256, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	x := sasync.NewExecutor(tl)
	defer x.Close()
	gate := make(chan struct{})
	b := allocAtNext(t, a, e0, 256)
	ev, err := x.Submit(e0, nil, func(context.Context) error { <-gate; return nil })
	require.NoError(t, err)
	require.NoError(t, a.UseBuffer(b, ev, Read))
	require.NoError(t, a.Release(b))
	x.Start(context.Background())

	seen := tl.DeliveredClock()
	pt, _ := tl.Point(e1)
	_, err = a.Alloc(256, pt)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	close(gate) // the reader runs now, as a Stalled hook may let it
	require.NoError(t, x.Wait(ev))
	notE0 := func(e sasync.EngineID) bool { return e != e0 }
	ok, err := waitForSpace(x, ns, notE0, &seen, e0, e1)
	require.NoError(t, err)
	require.True(t, ok, "the reader's completion was delivered after the failed allocation")
	pt, _ = tl.Point(e1)
	_, err = a.Alloc(256, pt)
	require.NoError(t, err)

	seen = tl.DeliveredClock()
	_, err = a.Alloc(256, pt)
	require.True(t, errors.As(err, &ns), "%v", err)
	ok, err = waitForSpace(x, ns, notE0, &seen, e0, e1)
	require.NoError(t, err)
	require.False(t, ok, "nothing delivered since: the live set does not fit")
	require.NoError(t, a.CheckInvariants())
}

// TestAllocWaitingBadWait: a SpaceWait without an Executor, or with one of
// another Timeline, is ErrInvalidWait, and nothing is allocated.
func TestAllocWaitingBadWait(t *testing.T) {
	_, e0, a := newComputeAllocator(t, 256, 256)
	other := sasync.NewExecutor(sasync.NewTimeline())
	defer other.Close()
	for _, w := range []SpaceWait{{}, {Executor: other}} {
		b, err := a.AllocWaiting(256, e0, w)
		require.ErrorIs(t, err, ErrInvalidWait)
		require.Nil(t, b)
	}
	require.Zero(t, a.Stats().Live)
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
