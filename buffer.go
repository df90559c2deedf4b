package subarena

import (
	"fmt"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Buffer is one allocation [Offset, Offset+Size) of the arena, owned by the
// program until it calls Release (or discards, donates or claims away all
// of its bytes). Its address never changes. A released Buffer stays a valid
// Go value: every operation on it reports ErrReleased.
type Buffer struct {
	a         *Allocator
	id        uint64
	off, size int64
	span      int64 // bytes taken from the arena: size rounded up to the granule (donated: exactly size)
	// slot is the buffer's index in the Allocator's list of held buffers,
	// -1 once released (isReleased). Guarded by a.mu.
	slot int
	// The Whole view lives inside the Buffer (its shape and strides too),
	// so allocating a buffer costs no extra objects for it.
	whole     View
	wholeDims [2]int64
	// Room for the runs of live in the common case (one run), so a
	// buffer's bookkeeping needs no allocation of its own.
	liveRuns [1]ranges.Range

	// Guarded by a.mu.
	live ranges.Set // absolute bytes the program still holds
	// claims lists the open claims on the buffer's bytes, nil when there
	// has never been one: most buffers are never claimed, and a pointer is
	// a word where a slice is three.
	claims *[]*Claim
	// A buffer built over held bytes taken fenced keeps the fence's
	// components that had not completed when it was allocated (see
	// residual); nil when there is none. It is never changed once set
	// (Donate shares it with the output). Most buffers have none, so it
	// lives apart: a Buffer is then 208 bytes, and a slab of 39 (with the
	// heap's header) fits in 8 KiB (buffersPerSlab).
	residual *residual
}

// isReleased reports whether the program no longer holds any byte of b (it
// left the Allocator's list). Caller holds a.mu.
func (b *Buffer) isReleased() bool { return b.slot < 0 }

// residual is the fence a buffer took held bytes under, less what had
// completed then: only ops ordered after clock may use the buffer.
type residual struct {
	clock sasync.Clock
	// Every op of engine bornEngine with a seq above bornSeq was submitted
	// after the Alloc, and so is ordered after the Alloc's point;
	// bornCovers says that point covers clock (it does unless
	// AllocOptions.MayWait took pending bytes). Such an op is then ordered
	// after clock without its own clock, which Forget may have dropped
	// once it completed.
	bornSeq    sasync.Seq
	bornEngine sasync.EngineID
	bornCovers bool
}

// bornOrdered reports whether ev is known to be ordered after b's residual
// by when it was submitted (see residual.bornSeq). b has a residual.
func (b *Buffer) bornOrdered(ev sasync.Event) bool {
	r := b.residual
	return r.bornCovers && ev.Engine == r.bornEngine && ev.Seq > r.bornSeq
}

// ID returns the buffer's identifier, unique within its Allocator.
func (b *Buffer) ID() uint64 { return b.id }

// Offset returns the buffer's first byte in the arena.
func (b *Buffer) Offset() int64 { return b.off }

// Size returns the buffer's size in bytes as requested.
func (b *Buffer) Size() int64 { return b.size }

// Range returns [Offset, Offset+Size).
func (b *Buffer) Range() ranges.Range { return ranges.Range{Lo: b.off, Hi: b.off + b.size} }

// Bytes returns the buffer's bytes in the arena's backing memory (nil when
// the Allocator has no Backing). The slice is capped at Size.
func (b *Buffer) Bytes() []byte {
	if b == nil || b.a == nil {
		return nil
	}
	return b.a.ar.Bytes(arena.Block{Offset: b.off, Size: b.size})
}

// AppendWaits appends to dst the events the buffer's ops must happen-after
// and returns it: one per engine, the latest of that engine's users of the
// bytes b took over while they were still pending (AllocOptions.MayWait),
// or whose completion the Allocator had not seen yet. Submitting each of
// the buffer's ops with these waits (or after them on their engine) is
// what Use requires; an event that has completed since may be waited on
// all the same. Nothing is appended for a buffer that took no pending
// bytes. A nil or foreign-made Buffer appends nothing.
func (b *Buffer) AppendWaits(dst []sasync.Event) []sasync.Event {
	if b == nil || b.residual == nil {
		return dst
	}
	for e, seq := range b.residual.clock {
		if seq > 0 {
			dst = append(dst, sasync.Event{Engine: sasync.EngineID(e), Seq: seq})
		}
	}
	return dst
}

// Released reports whether the program no longer holds any byte of b. A nil
// or zero Buffer holds nothing: it reads as released.
func (b *Buffer) Released() bool {
	if b == nil || b.a == nil {
		return true
	}
	b.a.mu.Lock()
	defer b.a.mu.Unlock()
	return b.isReleased()
}

// String describes the buffer.
func (b *Buffer) String() string {
	return fmt.Sprintf("buffer %d [%d, %d)", b.id, b.off, b.off+b.size)
}

// Whole returns the view of every byte of b: a dense 1-D byte layout. For a
// nil Buffer it returns nil, which every operation refuses with ErrForeign.
func (b *Buffer) Whole() *View {
	if b == nil {
		return nil
	}
	return &b.whole
}

// initWhole sets up the Whole view; called once, before b is published,
// with the Allocator's mu held.
//
// b comes zeroed from the slab (newBuffer), so only the fields a Whole
// view sets are written. A dense 1-D layout of every byte covers exactly
// [off, off+size): what coverLocked would compute, known without
// computing it.
func (b *Buffer) initWhole() {
	w := &b.whole
	d := b.wholeDims[:]
	d[0], d[1] = b.size, 1
	w.buf, w.dims, w.elem = b, d, 1
	w.coverRun[0] = ranges.Range{Lo: b.off, Hi: b.off + b.size}
	w.coverDone, w.coverOK, w.coverOne = true, true, b.size > 0
}

// View takes a view of b with layout l, relative to b's first byte, and
// validates it against b's bounds (strided.ErrOutOfBounds,
// strided.ErrInvalidLayout, strided.ErrOverflow). A nil or zero Buffer
// fails with ErrForeign.
func (b *Buffer) View(l strided.Layout) (*View, error) {
	if b == nil || b.a == nil {
		return nil, fmt.Errorf("%w: view of a buffer no Allocator made", ErrForeign)
	}
	// The Whole view starts at the buffer's first byte: l needs no
	// moving, and derive takes it as it is.
	return b.whole.derive(l, nil)
}

// Dense views b as a row-major tensor of the given shape and element size,
// starting at byte offset.
func (b *Buffer) Dense(offset int64, shape []int64, elem int64) (*View, error) {
	if b == nil || b.a == nil {
		return nil, fmt.Errorf("%w: view of a buffer no Allocator made", ErrForeign)
	}
	l, err := strided.Dense(offset, shape, elem)
	if err != nil {
		return nil, err
	}
	return b.View(l)
}

// wholeLive reports whether b still holds every requested byte (nothing
// discarded, donated or claimed away): the common case, in which every
// view's bytes are held. Caller holds a.mu.
func (b *Buffer) wholeLive() bool {
	rs := b.live.Runs()
	return len(rs) == 1 && rs[0].Lo <= b.off && rs[0].Hi >= b.off+b.size
}

// checkLiveLocked reports ErrReleased if any byte of cover is no longer
// held by the program (heldCover asks only when wholeLive does not answer).
func (b *Buffer) checkLiveLocked(cover []ranges.Range) error {
	for _, r := range cover {
		if !b.live.ContainsRange(r) {
			return b.discardedErr(r)
		}
	}
	return nil
}

// freedPadding returns the granule padding [off+size, off+span) still
// held by b, and true, when removing bytes from b.live leaves no requested
// byte in the granule that padding ends: no view reaches the padding, so
// once that granule's requested bytes go it must go with them, or it
// would pin the granule for good.
func (b *Buffer) freedPadding(bytes *ranges.Set) (ranges.Range, bool) {
	end, padEnd := b.off+b.size, b.off+b.span
	if end >= padEnd {
		return ranges.Range{}, false
	}
	last := ranges.Range{Lo: max(b.off, ranges.Granule(b.a.cfg.Granule).Down(end)), Hi: end}
	for _, r := range b.live.Runs() {
		if in := r.Intersect(last); !in.Empty() && !bytes.ContainsRange(in) {
			return ranges.Range{}, false
		}
	}
	pad, ok := b.live.Overlaps(ranges.Range{Lo: end, Hi: padEnd})
	return pad, ok && !bytes.ContainsRange(pad)
}

// openClaims returns the open claims on b's bytes.
func (b *Buffer) openClaims() []*Claim {
	if b.claims == nil {
		return nil
	}
	return *b.claims
}

// claimOverlapping returns an open claim on bytes of runs, if any.
func (b *Buffer) claimOverlapping(runs []ranges.Range) *Claim {
	if b.claims == nil {
		return nil
	}
	for _, c := range *b.claims {
		for _, r := range runs {
			if _, ok := c.bytes.Overlaps(r); ok {
				return c
			}
		}
	}
	return nil
}
