package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
	sasync "github.com/subarena/subarena/sync"
)

// TestCopiedReservationCannotCancelAnotherPin: a Reservation copied by
// value is not a second handle to the pin. Once the original is cancelled
// (its liveness user id is free for reuse), the copy's Cancel must fail and
// leave the reader that took the id pinned; otherwise the reader's bytes
// go back to reuse while it still reads them.
func TestCopiedReservationCannotCancelAnotherPin(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	b := allocAtNext(t, a, e0, 256)
	r, err := a.Reserve(b.Whole())
	require.NoError(t, err)
	forged := *r
	require.NoError(t, r.Cancel())

	reader, _ := tl.Submit(e0)
	require.NoError(t, a.UseBuffer(b, reader, Read))
	require.NoError(t, a.Release(b))
	require.Equal(t, 1, a.Stats().Users)

	before := snapshot(a)
	require.ErrorIs(t, forged.Cancel(), ErrForeign)
	require.ErrorIs(t, forged.Activate(reader, Read), ErrForeign)
	require.Equal(t, before, snapshot(a), "a refused copy changes nothing")
	st := a.Stats()
	require.Equal(t, 1, st.Users, "the reader still pins its bytes")
	require.Equal(t, int64(256), st.Pending)

	other := allocAtNext(t, a, e1, 256)
	require.NotEqual(t, b.Offset(), other.Offset(), "the pending reader's bytes must not be handed to an unordered writer")
	require.NoError(t, a.CheckInvariants())
}

// TestCopiedOpenReservation: a copy of a reservation still open is refused
// too; the original then works as if the copy had never been made.
func TestCopiedOpenReservation(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	b := allocAtNext(t, a, e0, 256)
	r, err := a.Reserve(b.Whole())
	require.NoError(t, err)
	forged := *r
	ev, _ := tl.Submit(e0)
	before := snapshot(a)
	require.ErrorIs(t, forged.Activate(ev, Write), ErrForeign)
	require.ErrorIs(t, forged.Cancel(), ErrForeign)
	require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))
	require.NoError(t, r.Activate(ev, Write))
	require.ErrorIs(t, r.Cancel(), ErrFinished)
	require.NoError(t, a.CheckInvariants())
}

// TestCopiedBufferRefused: a Buffer copied by value is not the buffer:
// releasing the copy, or using views of it, is refused before or after the
// original's release, and the arena never frees the bytes twice.
func TestCopiedBufferRefused(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	b := allocAtNext(t, a, e0, 256)
	keep := allocAtNext(t, a, e0, 256)
	fake := *b
	before := snapshot(a)
	require.ErrorIs(t, a.Release(&fake), ErrForeign)
	ev, _ := tl.Submit(e0)
	require.ErrorIs(t, a.UseBuffer(&fake, ev, Read), ErrForeign, "fake's Whole is fake's own view")
	_, err := a.Reserve(fake.Whole())
	require.ErrorIs(t, err, ErrForeign)
	_, err = a.Claim(fake.Whole())
	require.ErrorIs(t, err, ErrForeign)
	require.ErrorIs(t, a.Discard(fake.Whole()), ErrForeign)
	_, err = a.Donate(fake.Whole(), ev)
	require.ErrorIs(t, err, ErrForeign)
	require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))

	require.NoError(t, a.Release(b))
	require.ErrorIs(t, a.Release(&fake), ErrForeign)
	require.ErrorIs(t, a.Release(b), ErrDoubleRelease)
	st := a.Stats()
	require.Equal(t, 1, st.Buffers, "keep is still held")
	require.Equal(t, int64(256), st.Live)
	require.NoError(t, a.CheckInvariants())
	require.NoError(t, a.Release(keep))
	requireAllReturned(t, a)
}

// TestCopiedClaimRefused: committing or abandoning a copy of a Claim is
// refused, and the original claim still works.
func TestCopiedClaimRefused(t *testing.T) {
	_, e0, a := newComputeAllocator(t, 1<<12, 256)
	b := allocAtNext(t, a, e0, 256)
	c, err := a.Claim(b.Whole())
	require.NoError(t, err)
	fake := *c
	before := snapshot(a)
	require.ErrorIs(t, fake.Commit(), ErrForeign)
	require.ErrorIs(t, fake.Abandon(), ErrForeign)
	require.Equal(t, before, snapshot(a))
	require.NoError(t, c.Commit())
	require.ErrorIs(t, fake.Commit(), ErrForeign)
	require.ErrorIs(t, c.Commit(), ErrFinished)
	require.True(t, b.Released())
	requireAllReturned(t, a)
	require.NoError(t, a.CheckInvariants())
}
