package subarena

import (
	"fmt"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/ranges"
)

// CheckInvariants verifies the Allocator's invariants and those of its arena
// and liveness index, returning the first violation:
//   - the arena always took back what it was given;
//   - buffers' held bytes lie within their spans, are pairwise disjoint, and
//     disjoint from the released bytes waiting to return;
//   - the arena's allocated bytes are exactly the granules touched by held
//     and waiting bytes; the live byte count adds up;
//   - open claims cover held bytes that no pending user covers;
//   - open reservations are listed once, at their slots.
func (a *Allocator) CheckInvariants() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkLocked()
}

// unlockChecked unlocks a after a mutator; under the invariants build tag
// it first checks every invariant (and unlocks even when that panics).
// Mutators lock a.mu and defer it; the ones on a tensor's path (Alloc, Use,
// Release, the completion subscriber) do their work in a function of their
// own and call it after, which costs no deferred call.
func (a *Allocator) unlockChecked() {
	if invariants.Enabled {
		defer a.mu.Unlock()
		a.verifyLocked()
		return
	}
	a.mu.Unlock()
}

// verifyLocked panics with the first broken invariant. In builds with the
// invariants tag every mutator runs it before unlocking (unlockChecked,
// Pebble's way): a test then fails at the call that broke something, not
// at the next check. Caller holds mu.
func (a *Allocator) verifyLocked() { invariants.Hold(a.checkLocked()) }

// checkLocked is CheckInvariants with mu held.
func (a *Allocator) checkLocked() error {
	if a.internalErr != nil {
		return a.internalErr
	}
	if err := a.ar.CheckInvariants(); err != nil {
		return err
	}
	if err := a.idx.CheckInvariants(); err != nil {
		return err
	}
	var all ranges.Set
	held := a.idx.Held()
	all.AddSet(held)
	var live int64
	n := 0
	for i, b := range a.buffers {
		n++
		if b == nil {
			return fmt.Errorf("subarena: buffer list slot %d is empty", i)
		}
		if b.slot != i {
			return fmt.Errorf("subarena: buffer list slot %d holds buffer %d of slot %d", i, b.id, b.slot)
		}
		if b.isReleased() || b.live.IsEmpty() {
			return fmt.Errorf("subarena: retired buffer %d still listed", b.id)
		}
		span := ranges.Range{Lo: b.off, Hi: b.off + b.span}
		if bd := b.live.Bounds(); bd.Lo < span.Lo || bd.Hi > span.Hi {
			return fmt.Errorf("subarena: buffer %d holds %v outside its span %v", b.id, bd, span)
		}
		if r, ok := all.OverlapsSet(&b.live); ok {
			return fmt.Errorf("subarena: buffer %d bytes %v also held elsewhere", b.id, r)
		}
		all.AddSet(&b.live)
		live += b.live.Len()
		for _, c := range b.openClaims() {
			if c.done {
				return fmt.Errorf("subarena: finished claim listed on buffer %d", b.id)
			}
			for _, r := range c.bytes.Runs() {
				if a.idx.Covered(r) {
					return fmt.Errorf("subarena: claimed bytes %v of buffer %d have a pending user", r, b.id)
				}
			}
		}
	}
	for i, r := range a.resv {
		if r.slot != i || r.done || r.a != a {
			return fmt.Errorf("subarena: open reservation %d: slot %d, finished %v", i, r.slot, r.done)
		}
	}
	if live != a.live {
		return fmt.Errorf("subarena: %d buffers / %d live bytes listed, counted %d live bytes", n, live, a.live)
	}
	g := a.cfg.Granule
	used := all.AlignOut(g)
	for _, r := range used.Runs() {
		if !a.ar.IsAllocated(r.Lo, r.Len()) {
			return fmt.Errorf("subarena: bytes %v in use but free in the arena", r)
		}
	}
	if st := a.ar.Stats(); st.InUse != used.Len() {
		return fmt.Errorf("subarena: arena has %d bytes in use, buffers and held bytes touch %d", st.InUse, used.Len())
	}
	return nil
}
