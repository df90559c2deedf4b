package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// handover is the shape the fence tests share: buffer b1 is read by op r on
// the copy engine and released; the compute engine submits x, which waits
// for r; b2, allocated at the compute engine's point, takes b1's bytes
// fenced (r is pending but happens-before the point).
type handover struct {
	tl                *sasync.Timeline
	a                 *Allocator
	compute, cp, host sasync.EngineID
	b1, b2            *Buffer
	r, x              sasync.Event
}

func newHandover(t *testing.T) *handover {
	t.Helper()
	h := &handover{tl: sasync.NewTimeline()}
	h.compute, _ = h.tl.AddEngine("compute", sasync.Compute)
	h.cp, _ = h.tl.AddEngine("copy", sasync.Copy)
	h.host, _ = h.tl.AddEngine("host", sasync.Host)
	var err error
	h.a, err = New(Config{Capacity: 1 << 12, Granule: 256, Timeline: h.tl})
	require.NoError(t, err)
	p1, err := h.tl.Point(h.cp)
	require.NoError(t, err)
	h.b1, err = h.a.Alloc(1024, p1)
	require.NoError(t, err)
	h.r, _ = h.tl.Submit(h.cp)
	require.NoError(t, h.a.UseBuffer(h.b1, h.r, Read))
	require.NoError(t, h.a.Release(h.b1))
	h.x, err = h.tl.Submit(h.compute, h.r)
	require.NoError(t, err)
	p0, err := h.tl.Point(h.compute)
	require.NoError(t, err)
	h.b2, err = h.a.Alloc(1024, p0)
	require.NoError(t, err)
	require.Equal(t, h.b1.Offset(), h.b2.Offset(), "b2 should take b1's bytes fenced")
	require.True(t, h.b2.residual != nil, "b2 took bytes whose reader r is pending: it carries r in its fence")
	return h
}

// TestForgetKeepsOrderedUse: bytes handed over fenced carry the fence of
// their previous owner's reader r. A use of the new buffer by an op ordered
// after r only through an op the Timeline has forgotten is accepted: Forget
// loses no ordering an allocator asks about.
func TestForgetKeepsOrderedUse(t *testing.T) {
	h := newHandover(t)
	tl, a := h.tl, h.a
	after, _ := tl.Submit(h.compute) // so that x is not the engine's last op and can be forgotten
	require.NoError(t, tl.Complete(after))
	tl.Forget()
	require.GreaterOrEqual(t, tl.Forgotten(h.compute), h.x.Seq, "x must be forgotten")

	y, err := tl.Submit(h.host, h.x)
	require.NoError(t, err)
	require.NoError(t, a.UseBuffer(h.b2, y, Write), "y is ordered after r, which has completed")
	require.NoError(t, a.CheckInvariants())
}

// TestResidualFenceStillRefusesUnordered: the check that Forget must not
// break still refuses a use that runs unordered with a pending reader.
func TestResidualFenceStillRefusesUnordered(t *testing.T) {
	h := newHandover(t)
	tl, a := h.tl, h.a
	y, _ := tl.Submit(h.host) // waits for nothing while r is pending
	before := snapshot(a)
	require.ErrorIs(t, a.UseBuffer(h.b2, y, Write), ErrUnordered)
	require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))

	// y was submitted while r was pending and may have started: r's
	// completion since does not make y ordered after it.
	require.NoError(t, tl.Complete(h.r))
	require.ErrorIs(t, a.UseBuffer(h.b2, y, Write), ErrUnordered)
	// An op submitted after r completed and waiting on it is fine.
	z, _ := tl.Submit(h.host, h.r)
	require.NoError(t, a.UseBuffer(h.b2, z, Write))
	require.NoError(t, a.CheckInvariants())
}

// TestClaimBeyondCoverBudget: a view whose exact cover needs more than
// CoverBudget runs is indexed by a superset of its bytes; committing a
// claim on it would discard bytes the program still holds, so Claim
// refuses it and changes nothing. The odd bytes stay usable.
func TestClaimBeyondCoverBudget(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<18, 256)
	const size = 131092
	b := allocAtNext(t, a, e0, size)
	even, err := b.View(strided.Layout{Shape: []int64{size / 2}, Strides: []int64{2}, Elem: 1})
	require.NoError(t, err)
	odd, err := b.View(strided.Layout{Offset: 1, Shape: []int64{size / 2}, Strides: []int64{2}, Elem: 1})
	require.NoError(t, err)

	live := a.Stats().Live
	before := snapshot(a)
	c, err := a.Claim(even)
	require.ErrorIs(t, err, ErrInvalidLayout)
	require.Nil(t, c)
	require.Equal(t, before, snapshot(a), "a refused claim changes nothing")
	require.Equal(t, live, a.Stats().Live)

	ev, _ := tl.Submit(e0)
	require.NoError(t, a.Use(odd, ev, Read), "the odd bytes are still the program's")

	// The whole buffer can still be claimed once its reader is done.
	require.NoError(t, tl.Complete(ev))
	whole, err := a.Claim(b.Whole())
	require.NoError(t, err)
	require.NoError(t, whole.Commit())
	require.Zero(t, a.Stats().Live)
	require.NoError(t, a.CheckInvariants())
}

// TestAllocForgedPoint: a point whose clock claims ops its Timeline never
// ordered before the next op of its engine is refused, so no byte whose
// reader is pending is handed out on its word; the truthful point of the
// same engine, and an older one, are accepted.
func TestAllocForgedPoint(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	old, _ := tl.Point(e0)
	b1, err := a.Alloc(1024, old)
	require.NoError(t, err)
	r, _ := tl.Submit(e1)
	require.NoError(t, a.UseBuffer(b1, r, Read))
	require.NoError(t, a.Release(b1))

	forged, _ := tl.Point(e0)
	forged.Clock[e1] = 1000
	before := snapshot(a)
	_, err = a.Alloc(1024, forged)
	require.ErrorIs(t, err, ErrInvalidPoint)
	require.Equal(t, before, snapshot(a))

	now, _ := tl.Point(e0)
	b2, err := a.Alloc(1024, now)
	require.NoError(t, err)
	require.NotEqual(t, b1.Offset(), b2.Offset(), "r is pending and unordered before e0: its bytes are not safe")
	b3, err := a.Alloc(1024, old)
	require.NoError(t, err)
	require.NotEqual(t, b1.Offset(), b3.Offset())
	require.NoError(t, a.CheckInvariants())
}

// TestDiscardEveryRequestedByte: discarding, piece by piece, every byte a
// buffer asked for also lets its granule padding go, so the buffer retires
// and Live returns to zero.
func TestDiscardEveryRequestedByte(t *testing.T) {
	_, e0, a := newComputeAllocator(t, 1<<12, 256)
	b := allocAtNext(t, a, e0, 1000) // 24 bytes of padding
	lo, err := b.View(strided.Bytes(0, 600))
	require.NoError(t, err)
	hi, err := b.View(strided.Bytes(600, 400))
	require.NoError(t, err)
	require.NoError(t, a.Discard(lo))
	require.False(t, b.Released())
	require.NoError(t, a.Discard(hi))
	require.True(t, b.Released(), "no requested byte is held")
	st := a.Stats()
	require.Zero(t, st.Live)
	require.Zero(t, st.Buffers)
	require.Zero(t, st.InUse)
	require.NoError(t, a.CheckInvariants())
}

// TestDiscardLastGranulesRequestedBytes: discarding the requested bytes of
// a buffer's last granule lets that granule go with its padding, while the
// rest of the buffer stays held (the random campaign found the padding
// pinning the granule for good: with nothing pending, released bytes never
// returned).
func TestDiscardLastGranulesRequestedBytes(t *testing.T) {
	_, e0, a := newComputeAllocator(t, 64, 8)
	b := allocAtNext(t, a, e0, 9)            // granules [0,8) and [8,16); 7 bytes of padding
	tail, err := b.View(strided.Bytes(6, 3)) // bytes 6..8: byte 8 is the last granule's only requested byte
	require.NoError(t, err)
	require.NoError(t, a.Discard(tail))
	require.False(t, b.Released())
	st := a.Stats()
	require.Equal(t, int64(6), st.Live)
	require.Equal(t, int64(8), st.InUse, "the last granule, requested byte and padding, returned")
	require.Equal(t, int64(2), st.Held, "bytes 6 and 7 wait in the granule bytes 0..5 still use")
	require.NoError(t, a.CheckInvariants())
	require.NoError(t, a.Release(b))
	requireAllReturned(t, a)
}

// TestDonateLastGranulesRequestedBytes: donating the requested bytes of a
// buffer's last granule lets the padding after them go too, as Discard
// does, instead of leaving it held by a buffer no view reaches it through.
func TestDonateLastGranulesRequestedBytes(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 64, 8)
	b := allocAtNext(t, a, e0, 9) // 7 bytes of padding after byte 8
	tail, err := b.View(strided.Bytes(6, 3))
	require.NoError(t, err)
	op, _ := tl.Submit(e0)
	require.NoError(t, a.Use(tail, op, ReadWrite))
	out, err := a.Donate(tail, op)
	require.NoError(t, err)
	require.Equal(t, int64(3), out.Size())
	require.Equal(t, int64(9), a.Stats().Live, "b keeps bytes 0..5, the output 6..8; the padding is let go")
	require.NoError(t, a.CheckInvariants())
	require.NoError(t, tl.Complete(op))
	require.NoError(t, a.Release(b))
	require.NoError(t, a.Release(out))
	requireAllReturned(t, a)
}

// TestCachingFreeAllOrNothing: Free records the uses of every engine in one
// critical section; when recording one fails, none is recorded.
func TestCachingFreeAllOrNothing(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	c, err := NewCaching(a)
	require.NoError(t, err)
	b, err := c.Malloc(1024, e0)
	require.NoError(t, err)
	require.NoError(t, c.RecordStream(b, e1))
	first, _ := tl.Submit(e0)
	before := snapshot(a)
	// The second engine's event was never submitted: recording it fails,
	// and the first engine's use must not stay recorded.
	_, err = a.pinForFree(b, []sasync.Event{first, {Engine: e1, Seq: 5}})
	require.ErrorIs(t, err, ErrUnknownEvent)
	require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))
	require.Zero(t, a.Stats().Users)

	second, _ := tl.Submit(e1)
	require.NoError(t, c.Free(b))
	require.Equal(t, 2, a.Stats().Users, "both engines' last ops pin the freed buffer")
	require.NoError(t, tl.Complete(first))
	require.NoError(t, tl.Complete(second))
	require.Zero(t, a.Stats().Users)
	require.NoError(t, a.CheckInvariants())
	require.NoError(t, c.CheckInvariants())
}

// TestDonateKeepsFence: bytes handed over fenced keep their fence when
// donated: the op they are donated to must be ordered after it, and so
// must every later user of the donated buffer.
func TestDonateKeepsFence(t *testing.T) {
	h := newHandover(t)
	tl, a := h.tl, h.a
	op, _ := tl.Submit(h.compute) // ordered after r through the compute queue
	require.NoError(t, a.UseBuffer(h.b2, op, ReadWrite))
	stray, _ := tl.Submit(h.host) // not ordered after r
	before := snapshot(a)
	_, err := a.Donate(h.b2.Whole(), stray)
	require.ErrorIs(t, err, ErrUnordered)
	require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))

	out, err := a.Donate(h.b2.Whole(), op)
	require.NoError(t, err)
	later, _ := tl.Submit(h.host) // still not ordered after r
	require.ErrorIs(t, a.UseBuffer(out, later, Read), ErrUnordered, "the donated bytes keep their fence")
	after, _ := tl.Submit(h.host, op)
	require.NoError(t, a.UseBuffer(out, after, Read))
	require.NoError(t, a.CheckInvariants())
}

// TestUseByForgottenWriter: b2 took b1's bytes fenced (its reader r was
// pending); w, submitted on the allocating engine after the Alloc, is
// ordered after r. Once everything has completed and the Timeline has
// forgotten w itself, Use(b2, w) and a reservation's Activate with w are
// still accepted: w has completed and pins nothing, and its ordering
// after the fence is known without its clock.
func TestUseByForgottenWriter(t *testing.T) {
	h := newHandover(t)
	tl, a := h.tl, h.a
	res, err := a.Reserve(h.b2.Whole())
	require.NoError(t, err)
	w, _ := tl.Submit(h.compute)
	after, _ := tl.Submit(h.compute) // so that w is not its engine's last op
	for _, ev := range []sasync.Event{h.r, h.x, w, after} {
		require.NoError(t, tl.Complete(ev))
	}
	tl.Forget()
	require.GreaterOrEqual(t, tl.Forgotten(h.compute), w.Seq, "w must be forgotten")

	require.NoError(t, a.UseBuffer(h.b2, w, Write))
	require.NoError(t, res.Activate(w, Write))
	require.Zero(t, a.Stats().Users, "a completed op pins nothing")
	require.NoError(t, a.CheckInvariants())
}

// TestUseByForgottenUnorderedOp: an op that ran unordered with the fence's
// reader is not accepted because the Timeline forgot it.
func TestUseByForgottenUnorderedOp(t *testing.T) {
	h := newHandover(t)
	tl, a := h.tl, h.a
	y, _ := tl.Submit(h.host) // not ordered after r
	last, _ := tl.Submit(h.host)
	for _, ev := range []sasync.Event{h.r, h.x, y, last} {
		require.NoError(t, tl.Complete(ev))
	}
	tl.Forget()
	require.GreaterOrEqual(t, tl.Forgotten(h.host), y.Seq)
	before := snapshot(a)
	require.ErrorIs(t, a.UseBuffer(h.b2, y, Write), ErrUnordered)
	require.Equal(t, before, snapshot(a))
}

// TestHeldViewBeyondCoverBudget: a view indexed by a superset of its bytes
// (the odd bytes of a buffer) stays usable, under every safe policy, after
// the program discards the even bytes in exact pieces: every byte it reads
// is still held, though its superset reaches discarded ones. Use pins only
// held bytes.
func TestHeldViewBeyondCoverBudget(t *testing.T) {
	for _, pol := range []Policy{SubrangeFenced, SubrangeAfterUsers, WholeFenced, WholeAfterUsers} {
		t.Run(pol.String(), func(t *testing.T) {
			tl := sasync.NewTimeline()
			e0, _ := tl.AddEngine("compute", sasync.Compute)
			a, err := New(Config{Capacity: 1 << 18, Granule: 256, Timeline: tl, Policy: pol})
			require.NoError(t, err)
			const size = 131092
			b := allocAtNext(t, a, e0, size)
			odd, err := b.View(strided.Layout{Offset: 1, Shape: []int64{size / 2}, Strides: []int64{2}, Elem: 1})
			require.NoError(t, err)
			const chunk = 1 << 15 // even bytes per exact piece
			for lo := int64(0); lo < size; lo += 2 * chunk {
				n := min(chunk, (size-lo+1)/2)
				even, err := b.View(strided.Layout{Offset: lo, Shape: []int64{n}, Strides: []int64{2}, Elem: 1})
				require.NoError(t, err)
				require.NoError(t, a.Discard(even))
			}
			const padding = 131328 - size // to the granule; held while the last granule's odd bytes are
			require.Equal(t, int64(size/2+padding), a.Stats().Live, "the odd bytes and the padding are held")

			ev, _ := tl.Submit(e0)
			require.NoError(t, a.Use(odd, ev, Read))
			r, err := a.Reserve(odd)
			require.NoError(t, err)
			require.NoError(t, a.CheckInvariants())
			require.NoError(t, r.Cancel())
			require.NoError(t, tl.Complete(ev))

			// A view that does reach a discarded byte is still refused.
			both, err := b.View(strided.Layout{Offset: 0, Shape: []int64{size / 2}, Strides: []int64{2}, Elem: 1})
			require.NoError(t, err)
			ev2, _ := tl.Submit(e0)
			before := snapshot(a)
			require.ErrorIs(t, a.Use(both, ev2, Read), ErrReleased)
			require.Equal(t, stripSubmitted(before), stripSubmitted(snapshot(a)))
			require.NoError(t, tl.Complete(ev2))
			require.NoError(t, a.Release(b))
			requireAllReturned(t, a)
			require.NoError(t, a.CheckInvariants())
		})
	}
}

// TestDonateToForgottenOp: donating bytes to an op that has completed and
// been forgotten is decided as for any completed op: refused while another
// user is pending on the bytes, accepted once none is.
func TestDonateToForgottenOp(t *testing.T) {
	tl, e0, a := newComputeAllocator(t, 1<<12, 256)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	b := allocAtNext(t, a, e0, 256)
	op, _ := tl.Submit(e0)
	require.NoError(t, a.UseBuffer(b, op, ReadWrite))
	reader, _ := tl.Submit(e1)
	require.NoError(t, a.UseBuffer(b, reader, Read))
	last, _ := tl.Submit(e0)
	require.NoError(t, tl.Complete(last)) // completes op too
	tl.Forget()
	require.GreaterOrEqual(t, tl.Forgotten(e0), op.Seq)
	before := snapshot(a)
	_, err := a.Donate(b.Whole(), op)
	require.ErrorIs(t, err, ErrPending, "the copy engine's reader is pending")
	require.Equal(t, before, snapshot(a))
	require.NoError(t, tl.Complete(reader))
	out, err := a.Donate(b.Whole(), op)
	require.NoError(t, err)
	require.NoError(t, a.Release(out))
	requireAllReturned(t, a)
	require.NoError(t, a.CheckInvariants())
}
