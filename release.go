package subarena

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Release says the program is done with b: its bytes return piece by piece
// under the policy. Bytes no pending user covers return at once.
func (a *Allocator) Release(b *Buffer) error {
	if b == nil || b.a != a {
		return fmt.Errorf("%w: release", ErrForeign)
	}
	a.mu.Lock()
	err := a.releaseBuffer(b)
	a.unlockChecked()
	return err
}

// releaseBuffer is Release once b is known to be this Allocator's.
// Caller holds mu.
func (a *Allocator) releaseBuffer(b *Buffer) error {
	if b.isReleased() {
		return fmt.Errorf("%w: buffer %d", ErrDoubleRelease, b.id)
	}
	if !a.listed(b) {
		return fmt.Errorf("%w: buffer %d: a copy of a handle", ErrForeign, b.id)
	}
	if len(b.openClaims()) > 0 {
		return fmt.Errorf("%w: buffer %d has an open claim", ErrClaimed, b.id)
	}
	return a.releaseLocked(b, &b.live)
}

// releaseLocked hands bytes (a subset of b.live) to the index and drops
// them from b; b retires when nothing is left. When bytes takes the last
// of the buffer's requested bytes, the granule padding past them goes too:
// no view reaches it, so nothing else could ever release it.
func (a *Allocator) releaseLocked(b *Buffer, bytes *ranges.Set) error {
	if bytes != &b.live {
		if pad, ok := b.freedPadding(bytes); ok {
			// The last granule's requested bytes go: its padding goes too.
			withPad := bytes.Clone()
			withPad.Add(pad)
			bytes = &withPad
		}
	}
	if err := a.idx.Release(bytes, a.freeFn); err != nil {
		return err
	}
	a.live -= bytes.Len()
	if bytes == &b.live {
		b.live.Reset()
	} else {
		b.live.RemoveSet(bytes)
	}
	if b.live.IsEmpty() {
		a.retire(b)
	}
	return nil
}

// Discard says the program will not touch v's bytes again, through any
// name: they return under the policy while the rest of the buffer stays
// held. Bytes already discarded are skipped; discarding a view none of
// whose bytes are still held is ErrDoubleRelease.
func (a *Allocator) Discard(v *View) error {
	a.mu.Lock()
	defer a.unlockChecked()
	cover, err := a.checkView(v)
	if err != nil {
		if v != nil && v.buf != nil && v.buf.a == a && v.buf.isReleased() {
			return fmt.Errorf("%w: buffer %d", ErrDoubleRelease, v.buf.id)
		}
		return err
	}
	if !v.coverOK {
		return fmt.Errorf("%w: view %v needs more than %d runs; discard the buffer instead", ErrInvalidLayout, v.layout(), CoverBudget)
	}
	b := v.buf
	cs := setOf(cover)
	part := ranges.Intersect(&cs, &b.live)
	if part.IsEmpty() {
		return fmt.Errorf("%w: view of buffer %d already discarded", ErrDoubleRelease, b.id)
	}
	if c := b.claimOverlapping(part.Runs()); c != nil {
		return fmt.Errorf("%w: buffer %d", ErrClaimed, b.id)
	}
	return a.releaseLocked(b, &part)
}

// Donate hands v's bytes, in place, to the output of the op behind ev, the
// last user of those bytes (ggml's in-place ops, buffer donation): the
// returned buffer is exactly v's bytes, which leave v's buffer. v must be
// dense (one gap-free run) and still held, and every pending user of its
// bytes must be ev itself or happen-before ev (ErrPending otherwise): the
// op then overwrites bytes nobody else will read.
func (a *Allocator) Donate(v *View, ev sasync.Event) (*Buffer, error) {
	a.mu.Lock()
	defer a.unlockChecked()
	cover, _, err := a.heldCover(v)
	if err != nil {
		return nil, err
	}
	evClock, err := a.tl.EventClock(ev)
	if errors.Is(err, sasync.ErrForgotten) {
		// ev has completed, and so has everything before it: the
		// completed clock stands for its clock here, since no pending
		// user is covered by either.
		evClock, err = a.tl.CompletedClock(), nil
	}
	if err != nil {
		return nil, err
	}
	if len(cover) != 1 || !v.coverOK {
		return nil, fmt.Errorf("%w: %v", ErrNotDense, v.layout())
	}
	b := v.buf
	if b.residual != nil {
		// The output writes bytes the buffer took over fenced: ev must be
		// ordered after their previous owner's users, as any user must.
		if _, err := a.checkOrder(b, ev); err != nil {
			return nil, err
		}
	}
	r := cover[0]
	var other error
	a.idx.Users(r, func(_ liveness.UserID, uev sasync.Event, unknown bool) bool {
		if unknown || !evClock.Covers(uev) {
			other = fmt.Errorf("%w: %v of buffer %d is still used by %v", ErrPending, r, b.id, describeUser(uev, unknown))
			return false
		}
		return true
	})
	if other != nil {
		return nil, other
	}
	// The bytes keep the fence they were handed over with: only ops
	// ordered after it may use them under their new name either.
	nb := a.newBuffer()
	nb.off, nb.size, nb.span, nb.residual = r.Lo, r.Len(), r.Len(), b.residual
	b.live.Remove(r)
	a.live -= r.Len()
	var none ranges.Set
	if b.live.IsEmpty() {
		a.retire(b)
	} else if pad, ok := b.freedPadding(&none); ok {
		// The last granule's requested bytes left: its padding, which no
		// view reaches, is released, as Discard would.
		padSet := ranges.FromRanges(pad)
		if err := a.releaseLocked(b, &padSet); err != nil {
			a.checkArena(err)
		}
	}
	a.adopt(nb, r)
	return nb, nil
}
