package subarena

import (
	"fmt"

	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Claim is an eviction in progress: the claimed bytes had no pending user
// when it was taken, and no new user may take them (Use, Reserve, Donate
// and Discard fail with ErrClaimed) until it is committed or abandoned.
// Checking "no one uses it" and blocking new users happen under one lock,
// so a claim and a use can never both succeed.
type Claim struct {
	viewHold
	bytes ranges.Set
}

// viewHold is what a Claim and a Reservation hold: the Allocator and the
// view they were taken on, and whether they have been finished.
type viewHold struct {
	a    *Allocator
	view *View
	done bool
}

// locked runs f with the Allocator h was taken on locked; h must have been
// made by one.
func (h *viewHold) locked(f func(a *Allocator) error) error {
	h.a.mu.Lock()
	defer h.a.unlockChecked()
	return f(h.a)
}

// Claim claims v's bytes for eviction. It fails with ErrPending if any
// pending user covers them, ErrClaimed if another claim does, ErrReleased if
// the program no longer holds them.
func (a *Allocator) Claim(v *View) (*Claim, error) {
	return withHeldCover(a, v, func(cover []ranges.Range, _ bool) (*Claim, error) {
		if !v.coverOK {
			// Committing would discard a superset of v's bytes: bytes the
			// program still holds would return to reuse.
			return nil, fmt.Errorf("%w: view %v needs more than %d runs; claim the buffer instead", ErrInvalidLayout, v.layout(), CoverBudget)
		}
		b := v.buf
		for _, r := range cover {
			if a.idx.Covered(r) {
				return nil, fmt.Errorf("%w: %v of buffer %d", ErrPending, r, b.id)
			}
		}
		cs := setOf(cover)
		c := &Claim{viewHold: viewHold{a: a, view: v}, bytes: cs.Clone()}
		if b.claims == nil {
			b.claims = new([]*Claim)
		}
		*b.claims = append(*b.claims, c)
		return c, nil
	})
}

// withHeldCover runs f, under a's lock, with v's held cover and whether
// it is a held part of it (heldCover), unless heldCover refuses v.
func withHeldCover[T any](a *Allocator, v *View, f func(cover []ranges.Range, part bool) (T, error)) (T, error) {
	a.mu.Lock()
	defer a.unlockChecked()
	cover, part, err := a.heldCover(v)
	if err != nil {
		var zero T
		return zero, err
	}
	return f(cover, part)
}

// Errors of operations on a nil or zero Claim or Reservation.
var (
	errZeroClaim       = fmt.Errorf("%w: claim no Allocator made", ErrForeign)
	errZeroReservation = fmt.Errorf("%w: reservation no Allocator made", ErrForeign)
)

// finish marks c done and takes it off its buffer's list of open claims.
// A Claim copied by value is not on the list: it is refused, so that a
// copy cannot discard bytes a second time or outlive its original.
func (c *Claim) finish() error {
	if c.done {
		return fmt.Errorf("%w: claim", ErrFinished)
	}
	cs := c.view.buf.openClaims()
	for i, o := range cs {
		if o == c {
			c.done = true
			*c.view.buf.claims = append(cs[:i], cs[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: claim on buffer %d: a copy of a handle", ErrForeign, c.view.buf.id)
}

// Commit completes the eviction: the claimed bytes are discarded (the
// whole buffer released if the claim covered all it still held).
func (c *Claim) Commit() error {
	if c == nil || c.a == nil {
		return errZeroClaim
	}
	return c.locked(func(a *Allocator) error {
		if err := c.finish(); err != nil {
			return err
		}
		b := c.view.buf
		part := ranges.Intersect(&c.bytes, &b.live)
		if part.IsEmpty() {
			return nil
		}
		return a.releaseLocked(b, &part)
	})
}

// Abandon gives up the eviction: the bytes are usable again.
func (c *Claim) Abandon() error {
	if c == nil || c.a == nil {
		return errZeroClaim
	}
	return c.locked(func(*Allocator) error { return c.finish() })
}

// Reservation binds a view to an op that has not been submitted yet (a
// transfer into a buffer bound as an output long before it starts): the
// bytes are pinned by an unknown user — never assumed finished — until the
// reservation is activated with the op's event or cancelled. Releasing the
// buffer meanwhile does not free the reserved bytes.
type Reservation struct {
	viewHold
	user liveness.UserID
	// slot is the reservation's index in its Allocator's list of open
	// reservations while it is open. A Reservation copied by value has the
	// same slot but is not the one listed there: it is refused, so that a
	// copy cannot drop the pin of the user that took its liveness id.
	slot int
	// pinned is the runs the reservation pins when they are not the
	// view's cover (a view indexed by a superset, cut to the bytes held at
	// Reserve); nil otherwise.
	pinned []ranges.Range
}

// open returns nil when r is the open reservation listed at its slot,
// ErrFinished when r is finished, and ErrForeign for a copy. Caller holds
// mu.
func (r *Reservation) open(a *Allocator) error {
	if r.done {
		return fmt.Errorf("%w: reservation", ErrFinished)
	}
	if r.slot >= len(a.resv) || a.resv[r.slot] != r {
		return fmt.Errorf("%w: reservation: a copy of a handle", ErrForeign)
	}
	return nil
}

// close finishes r: it leaves the list of open reservations and its user
// leaves the index. Caller holds mu and has checked r.open.
func (r *Reservation) close(a *Allocator) error {
	r.done = true
	last := len(a.resv) - 1
	moved := a.resv[last]
	a.resv[r.slot], moved.slot = moved, r.slot
	a.resv[last] = nil
	a.resv = a.resv[:last]
	return a.idx.RemoveUser(r.user, a.freeFn)
}

// Reserve pins v's bytes for an op to be submitted later.
func (a *Allocator) Reserve(v *View) (*Reservation, error) {
	return withHeldCover(a, v, func(cover []ranges.Range, part bool) (*Reservation, error) {
		id, err := a.idx.AddUser(sasync.Event{}, true, cover)
		if err != nil {
			return nil, err
		}
		r := &Reservation{viewHold: viewHold{a: a, view: v}, user: id, slot: len(a.resv)}
		if part {
			// A held part (heldPartLocked): Activate pins the same bytes
			// (a copy, never nil, even of no run).
			r.pinned = append([]ranges.Range{}, cover...)
		}
		a.resv = append(a.resv, r)
		return r, nil
	})
}

// Activate turns the reservation into a Use by the op behind ev, with the
// same ordering checks as Use. The buffer may have been released since
// Reserve: the reservation kept its bytes.
func (r *Reservation) Activate(ev sasync.Event, acc Access) error {
	if r == nil || r.a == nil {
		return errZeroReservation
	}
	if acc == 0 || acc&^ReadWrite != 0 {
		return fmt.Errorf("%w: %d", ErrInvalidAccess, acc)
	}
	return r.locked(func(a *Allocator) error {
		if err := r.open(a); err != nil {
			return err
		}
		done, err := a.checkOrder(r.view.buf, ev)
		if err != nil {
			return err
		}
		if !done {
			cover := r.pinned
			if cover == nil {
				cover, _, _ = r.view.coverLocked()
			}
			if _, err := a.idx.AddUser(ev, false, cover); err != nil {
				return err
			}
		}
		return r.close(a)
	})
}

// Cancel drops the reservation: its bytes are no longer pinned by it.
func (r *Reservation) Cancel() error {
	if r == nil || r.a == nil {
		return errZeroReservation
	}
	return r.locked(func(a *Allocator) error {
		if err := r.open(a); err != nil {
			return err
		}
		return r.close(a)
	})
}
