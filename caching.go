package subarena

import (
	"errors"
	"fmt"
	stdsync "sync"

	"github.com/subarena/subarena/liveness"
	sasync "github.com/subarena/subarena/sync"
)

// Caching is a drop-in facade for engines written against a caching
// allocator with streams — PyTorch's CUDA caching allocator and its
// record_stream — built on an Allocator:
//
//	buf, _ := c.Malloc(size, streamA)  // bytes safe for streamA's next op
//	...ops on streamA and streamB use buf...
//	c.RecordStream(buf, streamB)      // streamB uses it too
//	c.Free(buf)                       // the host is done with it
//
// The program makes no Use calls: Free pins the whole buffer under the last
// op queued, since Malloc, on the allocating engine and on every engine
// recorded with RecordStream. Those bytes then return under the
// Allocator's policy: a later Malloc gets them only when every such op has
// completed or happens-before the new allocation's point. In particular
// Malloc on the same engine gets them at once under the fenced policies
// (stream order, as in PyTorch), and Malloc on the allocating engine after
// a recorded engine's work gets them once that work completes — or at once
// if the allocating engine was made to wait for it, which PyTorch's event
// polling cannot see.
//
// An op queued on a recorded engine that is not ordered after the
// buffer's previous owner (Allocator.Use reports ErrUnordered) cannot
// legitimately have touched the buffer, but the record says the engine did;
// Free then keeps the buffer whole, exactly as PyTorch does, until that op
// completes, and releases it from the completing goroutine.
//
// A Caching is safe for concurrent use. Lock order: the Caching's mutex
// before the Allocator's; completions release deferred buffers without
// holding the Caching's mutex.
type Caching struct {
	a  *Allocator
	tl *sasync.Timeline

	mu stdsync.Mutex
	// blocks maps every buffer Malloc returned and Free has not taken to
	// its record in slots; free lists the unused slots. Reusing slots keeps
	// Malloc and Free free of allocations in steady state (a Clock is too
	// large to sit in a map entry inline).
	blocks map[*Buffer]int32
	slots  []cachingBlock
	free   []int32
	// deferred holds freed buffers waiting for ops their uses could not be
	// recorded under; each is released once wait has completed.
	deferred []deferredFree
	// internalErr is the first failure of a deferred release, reported by
	// CheckInvariants.
	internalErr error
	unsubscribe func()
}

// cachingBlock is what the facade knows of one outstanding buffer.
type cachingBlock struct {
	engine sasync.EngineID // the engine Malloc was called for
	// born[e] is the last op submitted to engine e when Malloc returned:
	// only later ops can have used the buffer.
	born sasync.Clock
	// streams has bit e set for every engine recorded by RecordStream.
	streams uint32
}

type deferredFree struct {
	b    *Buffer
	wait sasync.Clock
}

// NewCaching returns a facade over a. It subscribes to a's Timeline until
// Close.
func NewCaching(a *Allocator) (*Caching, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: nil Allocator", ErrInvalidConfig)
	}
	c := &Caching{a: a, tl: a.Timeline(), blocks: make(map[*Buffer]int32)}
	c.unsubscribe = c.tl.Subscribe(c.onComplete)
	return c, nil
}

// Close stops listening to the Timeline: buffers whose Free was deferred
// are no longer released. It does not close the Allocator.
func (c *Caching) Close() { c.unsubscribe() }

// Allocator returns the Allocator behind the facade.
func (c *Caching) Allocator() *Allocator { return c.a }

// Malloc returns a buffer of size bytes for ops on engine: the bytes are
// safe for any op submitted to engine from now on, and for ops on other
// engines ordered after such an op. It fails with ErrUnknownEngine,
// ErrInvalidSize, or a *NoSpaceError (ErrNoSpace) that names the event to
// wait for before retrying.
func (c *Caching) Malloc(size int64, engine sasync.EngineID) (*Buffer, error) {
	pt, err := c.tl.Point(engine)
	if err != nil {
		return nil, fmt.Errorf("malloc: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.a.Alloc(size, pt)
	if err != nil {
		return nil, fmt.Errorf("malloc %d bytes on engine %d: %w", size, engine, err)
	}
	var slot int32
	if n := len(c.free); n > 0 {
		slot, c.free = c.free[n-1], c.free[:n-1]
	} else {
		slot = int32(len(c.slots))
		c.slots = append(c.slots, cachingBlock{})
	}
	blk := &c.slots[slot]
	*blk = cachingBlock{engine: engine}
	for e := range c.tl.NumEngines() {
		blk.born[e] = c.tl.Submitted(sasync.EngineID(e))
	}
	c.blocks[b] = slot
	return b, nil
}

// RecordStream records that ops on engine use b (PyTorch's
// Tensor.record_stream): when b is freed, its bytes may not be reused until
// the work queued on engine by then has completed or happens-before the
// reusing allocation. Recording the allocating engine, or an engine twice,
// changes nothing. It fails with ErrUnknownEngine, as Free does for a
// buffer it does not hold, and with ErrReleased for one the program
// released or discarded through the Allocator directly.
func (c *Caching) RecordStream(b *Buffer, engine sasync.EngineID) error {
	if _, err := c.tl.Engine(engine); err != nil {
		return fmt.Errorf("record stream: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	blk, err := c.lookupLocked(b, "record stream", ErrReleased)
	if err != nil {
		return err
	}
	if err := c.a.checkWhollyHeld(b); errors.Is(err, ErrReleased) {
		return fmt.Errorf("record stream: %w", err)
	}
	if engine != blk.engine {
		blk.streams |= 1 << engine
	}
	return nil
}

// Free hands b back: the whole buffer is pinned under the last op queued
// since Malloc on its engine and on every recorded engine, and released
// under the Allocator's policy (see Caching). It fails with ErrForeign for
// a buffer Malloc did not return, ErrDoubleRelease for a freed one,
// ErrReleased if the program released or discarded any of it through the
// Allocator directly, and ErrClaimed while an Allocator Claim covers it;
// then nothing has changed, except that a buffer the program released
// whole through the Allocator is no longer the facade's (Outstanding
// stops counting it: there is nothing left to free).
func (c *Caching) Free(b *Buffer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	blk, err := c.lookupLocked(b, "free", ErrDoubleRelease)
	if err != nil {
		return err
	}
	var lasts [sasync.MaxEngines]sasync.Event
	n := 0
	for e := range c.tl.NumEngines() {
		en := sasync.EngineID(e)
		if en != blk.engine && blk.streams&(1<<en) == 0 {
			continue
		}
		last := sasync.Event{Engine: en, Seq: c.tl.Submitted(en)}
		if last.Seq <= blk.born[en] {
			continue // nothing queued on it since Malloc
		}
		lasts[n] = last
		n++
	}
	wait, err := c.a.pinForFree(b, lasts[:n])
	if err != nil {
		if b.Released() {
			// The program released it through the Allocator: nothing is
			// left for the facade to free, and it lets go of the record.
			c.free = append(c.free, c.blocks[b])
			delete(c.blocks, b)
		}
		return fmt.Errorf("free: %w", err)
	}
	c.free = append(c.free, c.blocks[b])
	delete(c.blocks, b)
	if wait.IsZero() || c.tl.AllCompleted(&wait) {
		if err := c.a.Release(b); err != nil {
			return fmt.Errorf("free: %w", err)
		}
		return nil
	}
	c.deferred = append(c.deferred, deferredFree{b: b, wait: wait})
	return nil
}

// pinForFree records, in one critical section, that the ops behind lasts
// use every byte of b, for a free: all of them or none. An op not ordered
// after the fence b was handed over with is not recorded but returned in
// wait (the free must wait for it instead). b must still be wholly held
// and unclaimed; on any error nothing has changed.
func (a *Allocator) pinForFree(b *Buffer, lasts []sasync.Event) (wait sasync.Clock, err error) {
	a.mu.Lock()
	defer a.unlockChecked()
	if err := a.checkWhollyHeldLocked(b); err != nil {
		return wait, err
	}
	cover, _, err := a.heldCover(b.Whole())
	if err != nil {
		return wait, err
	}
	var record [sasync.MaxEngines]sasync.Event
	n := 0
	for _, last := range lasts {
		done, err := a.checkOrder(b, last)
		switch {
		case errors.Is(err, ErrUnordered):
			wait.Observe(last)
		case err != nil:
			return sasync.Clock{}, fmt.Errorf("recording %v: %w", last, err)
		case !done:
			record[n] = last
			n++
		}
	}
	var added [sasync.MaxEngines]liveness.UserID
	for i, ev := range record[:n] {
		id, err := a.idx.AddUser(ev, false, cover)
		if err != nil {
			for _, undo := range added[:i] {
				a.checkArena(a.idx.RemoveUser(undo, a.freeFn))
			}
			return sasync.Clock{}, fmt.Errorf("recording %v: %w", ev, err)
		}
		added[i] = id
	}
	return wait, nil
}

// checkWhollyHeld reports ErrReleased unless the program still holds every
// byte of b, and ErrClaimed if some of them are claimed.
func (a *Allocator) checkWhollyHeld(b *Buffer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.checkWhollyHeldLocked(b)
}

// checkWhollyHeldLocked is checkWhollyHeld with mu held.
func (a *Allocator) checkWhollyHeldLocked(b *Buffer) error {
	if b.isReleased() || !b.live.ContainsRange(b.Range()) {
		return fmt.Errorf("%w: buffer %d was released or discarded through the Allocator", ErrReleased, b.id)
	}
	if len(b.openClaims()) > 0 {
		return fmt.Errorf("%w: buffer %d", ErrClaimed, b.id)
	}
	return nil
}

// lookupLocked returns b's record, or the error for a buffer the facade
// does not hold: freed is the sentinel for one it held once. c.mu is held;
// the record is valid until it is released.
func (c *Caching) lookupLocked(b *Buffer, op string, freed error) (*cachingBlock, error) {
	if b == nil || b.a != c.a {
		return nil, fmt.Errorf("%s: %w", op, ErrForeign)
	}
	if slot, ok := c.blocks[b]; ok {
		return &c.slots[slot], nil
	}
	for _, d := range c.deferred {
		if d.b == b {
			return nil, fmt.Errorf("%s: buffer %d: %w", op, b.ID(), freed)
		}
	}
	if b.Released() {
		return nil, fmt.Errorf("%s: buffer %d: %w", op, b.ID(), freed)
	}
	return nil, fmt.Errorf("%s: buffer %d was not allocated by Malloc: %w", op, b.ID(), ErrForeign)
}

// onComplete releases the deferred buffers whose waits have completed.
func (c *Caching) onComplete(completed sasync.Clock) {
	c.mu.Lock()
	var ready []*Buffer
	kept := c.deferred[:0]
	for _, d := range c.deferred {
		if d.wait.LessEq(&completed) {
			ready = append(ready, d.b)
		} else {
			kept = append(kept, d)
		}
	}
	clear(c.deferred[len(kept):])
	c.deferred = kept
	c.mu.Unlock()
	for _, b := range ready {
		// A buffer the program released through the Allocator directly
		// meanwhile has nothing left to release.
		if err := c.a.Release(b); err != nil && !errors.Is(err, ErrDoubleRelease) {
			c.mu.Lock()
			if c.internalErr == nil {
				c.internalErr = fmt.Errorf("subarena: deferred free of buffer %d: %w", b.ID(), err)
			}
			c.mu.Unlock()
		}
	}
}

// Outstanding returns how many buffers Malloc returned that Free has not
// taken, and how many freed buffers wait for a recorded engine's work
// before they are released.
func (c *Caching) Outstanding() (allocated, deferred int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blocks), len(c.deferred)
}

// CheckInvariants verifies the facade and its Allocator, returning the
// first violation:
//   - no deferred release has failed;
//   - every outstanding or deferred buffer belongs to the Allocator and is
//     still wholly held by the program; no buffer is both. A buffer the
//     program released or discarded through the Allocator directly breaks
//     this until Free has refused it (dropping it when released whole) or,
//     for a deferred one, until its release is due;
//   - outstanding buffers name engines of the Timeline, and what they
//     recorded as submitted at Malloc has been submitted;
//   - every deferred buffer waits for some op;
//   - the Allocator's own invariants (Allocator.CheckInvariants).
func (c *Caching) CheckInvariants() error {
	c.mu.Lock()
	err := c.checkLocked()
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.a.CheckInvariants()
}

func (c *Caching) checkLocked() error {
	if c.internalErr != nil {
		return c.internalErr
	}
	n := c.tl.NumEngines()
	held := func(b *Buffer) error {
		if b.a != c.a {
			return fmt.Errorf("subarena: caching holds buffer %d of another allocator", b.ID())
		}
		if err := c.a.checkWhollyHeld(b); err != nil && !errors.Is(err, ErrClaimed) {
			return fmt.Errorf("subarena: caching holds buffer %d: %w", b.ID(), err)
		}
		return nil
	}
	if len(c.blocks)+len(c.free) != len(c.slots) {
		return fmt.Errorf("subarena: caching has %d slots, %d in use and %d free", len(c.slots), len(c.blocks), len(c.free))
	}
	seen := make([]bool, len(c.slots))
	for _, slot := range c.free {
		if slot < 0 || int(slot) >= len(c.slots) || seen[slot] {
			return fmt.Errorf("subarena: caching free slot %d out of range or listed twice", slot)
		}
		seen[slot] = true
	}
	for b, slot := range c.blocks {
		if slot < 0 || int(slot) >= len(c.slots) || seen[slot] {
			return fmt.Errorf("subarena: caching buffer %d in slot %d, out of range, free or shared", b.ID(), slot)
		}
		seen[slot] = true
		blk := &c.slots[slot]
		if err := held(b); err != nil {
			return err
		}
		if int(blk.engine) >= n || blk.streams>>n != 0 {
			return fmt.Errorf("subarena: caching buffer %d names engines beyond %d", b.ID(), n)
		}
		for e := range n {
			if s := c.tl.Submitted(sasync.EngineID(e)); blk.born[e] > s {
				return fmt.Errorf("subarena: caching buffer %d born after op %d of engine %d, which has submitted %d", b.ID(), blk.born[e], e, s)
			}
		}
	}
	for _, d := range c.deferred {
		if err := held(d.b); err != nil {
			return err
		}
		if _, dup := c.blocks[d.b]; dup {
			return fmt.Errorf("subarena: caching buffer %d both outstanding and deferred", d.b.ID())
		}
		if d.wait.IsZero() {
			return fmt.Errorf("subarena: caching buffer %d deferred for nothing", d.b.ID())
		}
	}
	return nil
}
