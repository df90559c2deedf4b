package subarena

import (
	"context"
	"errors"
	stdsync "sync"
	"testing"

	"github.com/stretchr/testify/require"
	sasync "github.com/subarena/subarena/sync"
)

// heldByReader is the waits' fixture: a 256-byte arena whose only buffer
// is released while a reader on compute (e0) still runs, blocked until
// open is called; e1 is a copy engine not ordered after it. The executor
// is started.
type heldByReader struct {
	tl     *sasync.Timeline
	e0, e1 sasync.EngineID
	a      *Allocator
	x      *sasync.Executor
	ev     sasync.Event // the reader
	open   func()       // lets the reader run; idempotent
}

func newHeldByReader(t *testing.T) *heldByReader {
	t.Helper()
	tl, e0, a := newComputeAllocator(t, 256, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	x := sasync.NewExecutor(tl)
	gate := make(chan struct{})
	var once stdsync.Once
	h := &heldByReader{tl: tl, e0: e0, e1: e1, a: a, x: x, open: func() { once.Do(func() { close(gate) }) }}
	t.Cleanup(func() { h.open(); _ = x.Close() })
	b := allocAtNext(t, a, e0, 256)
	ev, err := x.Submit(e0, nil, func(context.Context) error { <-gate; return nil })
	require.NoError(t, err)
	require.NoError(t, a.UseBuffer(b, ev, Read))
	require.NoError(t, a.Release(b))
	h.ev = ev
	x.Start(context.Background())
	return h
}

// failAt allocates 256 bytes for a writer on e1, which must fail, and
// returns the NoSpaceError with the DeliveredClock from before the try.
func (h *heldByReader) failAt(t *testing.T) (*NoSpaceError, sasync.Clock) {
	t.Helper()
	seen := h.tl.DeliveredClock()
	pt, err := h.tl.Point(h.e1)
	require.NoError(t, err)
	_, err = h.a.Alloc(256, pt)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	return ns, seen
}

// fitsAt allocates 256 bytes for a writer on e1, which must succeed.
func (h *heldByReader) fitsAt(t *testing.T, why string) *Buffer {
	t.Helper()
	pt, err := h.tl.Point(h.e1)
	require.NoError(t, err)
	b, err := h.a.Alloc(256, pt)
	require.NoError(t, err, why)
	return b
}

// spaceWait is a SpaceWait through h's executor.
func (h *heldByReader) spaceWait(waitable func(sasync.EngineID) bool, engines ...sasync.EngineID) *SpaceWait {
	return &SpaceWait{Executor: h.x, Engines: engines, Waitable: waitable}
}

// TestWaitForSpace: when the only room is held by a reader still running,
// SpaceWait.wait waits for it and returns once the Allocator has the bytes
// back, so the retry succeeds; with nothing in flight, or only work the
// host may not wait for, it reports false.
func TestWaitForSpace(t *testing.T) {
	h := newHeldByReader(t)
	ns, seen := h.failAt(t)
	never := func(sasync.EngineID) bool { return false }
	ok, err := h.spaceWait(never, h.e0, h.e1).wait(ns, &seen)
	require.NoError(t, err)
	require.False(t, ok, "the only work in flight may not be waited for")

	h.open()
	ok, err = h.spaceWait(nil, h.e0).wait(ns, &seen)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, h.tl.Delivered(h.ev))
	h.fitsAt(t, "the reader's completion reached the Allocator before the wait returned")

	ns, seen = h.failAt(t)
	ok, err = h.spaceWait(nil, h.e0).wait(ns, &seen)
	require.NoError(t, err)
	require.False(t, ok, "nothing in flight: the live set does not fit")
	require.NoError(t, h.a.CheckInvariants())
}

// TestWaitForSpaceDeliveredSince: work the host may not wait for that
// completes between the failed allocation and the wait has already given
// its bytes back, so SpaceWait.wait reports that a retry may succeed, and
// the retry does.
func TestWaitForSpaceDeliveredSince(t *testing.T) {
	h := newHeldByReader(t)
	ns, seen := h.failAt(t)
	h.open() // the reader runs now, as a Stalled hook may let it
	require.NoError(t, h.x.Wait(h.ev))
	notE0 := func(e sasync.EngineID) bool { return e != h.e0 }
	ok, err := h.spaceWait(notE0, h.e0, h.e1).wait(ns, &seen)
	require.NoError(t, err)
	require.True(t, ok, "the reader's completion was delivered after the failed allocation")
	h.fitsAt(t, "the retry after the delivery")

	ns, seen = h.failAt(t)
	ok, err = h.spaceWait(notE0, h.e0, h.e1).wait(ns, &seen)
	require.NoError(t, err)
	require.False(t, ok, "nothing delivered since: the live set does not fit")
	require.NoError(t, h.a.CheckInvariants())
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
	h := newHeldByReader(t)
	var stalls []int
	w := SpaceWait{Executor: h.x, Engines: []sasync.EngineID{h.e0, h.e1}, Stalled: func(attempt int) {
		stalls = append(stalls, attempt)
		h.open()
	}}
	b, err := h.a.AllocWaiting(256, h.e1, w)
	require.NoError(t, err)
	require.Equal(t, []int{0}, stalls, "one stall, then the retry fits")

	stalls = nil
	_, err = h.a.AllocWaiting(256, h.e1, w)
	var ns *NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	require.Equal(t, []int{0}, stalls)
	require.NoError(t, h.a.Release(b))
	require.NoError(t, h.a.CheckInvariants())
}

// TestAllocWaitingBeyondReach: a request that no wait can ever satisfy —
// more than the arena's capacity, or more than its capacity less the bytes
// the program holds — returns its NoSpaceError at once, even while another
// host keeps an engine busy (each stall submits more work, so there is
// always something to wait for).
func TestAllocWaitingBeyondReach(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 4096, 256)
	x := sasync.NewExecutor(tl)
	defer x.Close()
	x.Start(context.Background())
	held := allocAtNext(t, a, e0, 2048)
	for _, size := range []int64{8192, 4096, 2304} {
		stalls := 0
		w := SpaceWait{Executor: x, Engines: []sasync.EngineID{e0}, Stalled: func(attempt int) {
			stalls++
			if attempt < 100 { // another host keeping e0 busy
				_, err := x.Submit(e0, nil, func(context.Context) error { return nil })
				require.NoError(t, err)
			}
		}}
		b, err := a.AllocWaiting(size, e0, w)
		var ns *NoSpaceError
		require.True(t, errors.As(err, &ns), "%d bytes: %v", size, err)
		require.Nil(t, b)
		require.Equal(t, 1, stalls, "%d bytes can never fit: nothing is waited for", size)
	}
	require.NoError(t, a.Release(held))
	require.NoError(t, a.CheckInvariants())
}
