package subarena_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// waitFixture: buffer a, written on compute, is read by a copy-engine op
// that is still pending when a is released; compute then asks for a buffer
// the size of a. Its point does not follow the read, so a's bytes are held
// but not safe for it.
type waitFixture struct {
	tl            *sasync.Timeline
	compute, copy sasync.EngineID
	a             *subarena.Allocator
	old           *subarena.Buffer
	read          sasync.Event // the pending copy-engine read of old
}

func newWaitFixture(t *testing.T, policy subarena.Policy) *waitFixture {
	t.Helper()
	f := &waitFixture{tl: sasync.NewTimeline()}
	f.compute, _ = f.tl.AddEngine("compute", sasync.Compute)
	f.copy, _ = f.tl.AddEngine("copy", sasync.Copy)
	a, err := subarena.New(subarena.Config{Capacity: 1 << 16, Policy: policy, Timeline: f.tl})
	require.NoError(t, err)
	f.a = a
	pt, _ := f.tl.Point(f.compute)
	f.old, err = a.Alloc(4096, pt)
	require.NoError(t, err)
	w, _ := f.tl.Submit(f.compute)
	require.NoError(t, a.UseBuffer(f.old, w, subarena.Write))
	f.read, _ = f.tl.Submit(f.copy, w)
	require.NoError(t, a.UseBuffer(f.old, f.read, subarena.Read))
	require.NoError(t, f.tl.Complete(w))
	require.NoError(t, a.Release(f.old))
	return f
}

// TestAllocWithMayWait: MayWait lets a fenced Alloc take held bytes whose
// reader is still pending on another engine; the buffer then lists that
// read among its waits, and Use refuses an op not ordered after it.
func TestAllocWithMayWait(t *testing.T) {
	for _, policy := range []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced} {
		t.Run(policy.String(), func(t *testing.T) {
			f := newWaitFixture(t, policy)
			pt, _ := f.tl.Point(f.compute)

			// Without MayWait the bytes are not safe for the point.
			plain, err := f.a.Alloc(4096, pt)
			require.NoError(t, err)
			require.NotEqual(t, f.old.Offset(), plain.Offset(), "took bytes a pending reader still reads")
			require.Empty(t, plain.AppendWaits(nil))
			require.NoError(t, f.a.Release(plain))

			// A MayWait that refuses the read changes nothing.
			refused, err := f.a.AllocWith(4096, pt, subarena.AllocOptions{MayWait: func(sasync.Event) bool { return false }})
			require.NoError(t, err)
			require.NotEqual(t, f.old.Offset(), refused.Offset())
			require.NoError(t, f.a.Release(refused))

			var asked []sasync.Event
			b, err := f.a.AllocWith(4096, pt, subarena.AllocOptions{MayWait: func(ev sasync.Event) bool {
				asked = append(asked, ev)
				return ev == f.read
			}})
			require.NoError(t, err)
			require.Contains(t, asked, f.read)
			require.Equal(t, f.old.Offset(), b.Offset(), "the held bytes are the lowest and were accepted")
			waits := b.AppendWaits(nil)
			require.Contains(t, waits, f.read)

			before := f.a.Stats()
			early, _ := f.tl.Submit(f.compute) // not ordered after the read
			err = f.a.UseBuffer(b, early, subarena.Write)
			require.ErrorIs(t, err, subarena.ErrUnordered)
			require.Equal(t, before, f.a.Stats(), "a refused Use changed the Allocator")

			later, _ := f.tl.Submit(f.compute, waits...)
			require.NoError(t, f.a.UseBuffer(b, later, subarena.Write))
			require.NoError(t, f.a.Release(b))
			for _, ev := range []sasync.Event{early, f.read, later} {
				require.NoError(t, f.tl.Complete(ev))
			}
			require.NoError(t, f.a.CheckInvariants())
			st := f.a.Stats()
			require.Zero(t, st.Users)
			require.Zero(t, st.Held)
		})
	}
}

// TestAllocWithAfterUsersIgnoresMayWait: the after-users policies take no
// held bytes before their users complete, whatever MayWait says.
func TestAllocWithAfterUsersIgnoresMayWait(t *testing.T) {
	for _, policy := range []subarena.Policy{subarena.SubrangeAfterUsers, subarena.WholeAfterUsers} {
		f := newWaitFixture(t, policy)
		pt, _ := f.tl.Point(f.compute)
		b, err := f.a.AllocWith(4096, pt, subarena.AllocOptions{MayWait: func(sasync.Event) bool { return true }})
		require.NoError(t, err)
		require.NotEqual(t, f.old.Offset(), b.Offset(), "%v", policy)
		require.Empty(t, b.AppendWaits(nil))
	}
}

// TestAllocWithNeverTakesUnknownUsers: bytes a Reservation pins (a user of
// unknown event) are never taken, whatever MayWait says; without the
// reservation the same MayWait takes them (TestAllocWithMayWait).
func TestAllocWithNeverTakesUnknownUsers(t *testing.T) {
	tl := sasync.NewTimeline()
	compute, _ := tl.AddEngine("compute", sasync.Compute)
	copyEng, _ := tl.AddEngine("copy", sasync.Copy)
	a, err := subarena.New(subarena.Config{Capacity: 1 << 16, Policy: subarena.SubrangeFenced, Timeline: tl})
	require.NoError(t, err)
	pt, _ := tl.Point(compute)
	old, err := a.Alloc(4096, pt)
	require.NoError(t, err)
	read, _ := tl.Submit(copyEng)
	require.NoError(t, a.UseBuffer(old, read, subarena.Read))
	v, err := old.View(strided.Bytes(0, 256))
	require.NoError(t, err)
	_, err = a.Reserve(v)
	require.NoError(t, err)
	require.NoError(t, a.Release(old))
	pt, _ = tl.Point(compute)
	b, err := a.AllocWith(4096, pt, subarena.AllocOptions{MayWait: func(sasync.Event) bool { return true }})
	require.NoError(t, err)
	reserved := old.Range()
	reserved.Hi = reserved.Lo + 256
	require.False(t, b.Range().Overlaps(reserved), "took bytes a reservation pins: %v", b.Range())
	// The rest of old's bytes, pinned by the known read only, are taken.
	require.True(t, b.Range().Overlaps(old.Range()))
	require.Equal(t, []sasync.Event{read}, b.AppendWaits(nil))
}

// TestAppendWaits: nil and zero Buffers append nothing; dst is extended,
// not replaced.
func TestAppendWaits(t *testing.T) {
	var nilBuf *subarena.Buffer
	dst := []sasync.Event{{Engine: 1, Seq: 9}}
	require.True(t, slices.Equal(dst, nilBuf.AppendWaits(dst)))
	require.True(t, slices.Equal(dst, (&subarena.Buffer{}).AppendWaits(dst)))
}
