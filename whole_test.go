package subarena

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/ranges"
)

// TestWholeCoverKnown: the cover a Whole view is born with is exactly
// what computing it from its layout gives, for buffers at several offsets
// and sizes, padded to the granule or not, and for a donated buffer.
func TestWholeCoverKnown(t *testing.T) {
	tl, e, a := newComputeAllocator(t, 1<<16, 256)
	for _, size := range []int64{1, 255, 256, 257, 1000, 4096} {
		b := allocAtNext(t, a, e, size)
		checkWholeCover(t, b)
		if size >= 512 {
			half, err := b.Whole().Slice(0, 256, size, 1)
			require.NoError(t, err)
			ev, err := tl.Submit(e)
			require.NoError(t, err)
			d, err := a.Donate(half, ev)
			require.NoError(t, err)
			checkWholeCover(t, d)
		}
	}
}

func checkWholeCover(t *testing.T, b *Buffer) {
	t.Helper()
	w := b.Whole()
	abs := w.Layout()
	abs.Offset += b.Offset()
	var want ranges.Set
	exact, err := abs.AppendCover(&want, CoverBudget)
	require.NoError(t, err)
	require.True(t, exact)
	b.a.mu.Lock()
	got, ok, err := w.coverLocked()
	b.a.mu.Unlock()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, want.Runs(), got, "buffer %v", b)
}
