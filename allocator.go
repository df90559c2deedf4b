package subarena

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	stdsync "sync"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Config configures an Allocator.
type Config struct {
	// Capacity is the arena size in bytes, a multiple of Granule. In
	// Unbounded mode it is the initial size (it may be 0).
	Capacity int64
	// Granule is the arena's unit and alignment, a power of two; 0 means
	// arena.DefaultGranule (256 B).
	Granule int64
	// Policy says when released bytes return to reuse (default
	// SubrangeFenced).
	Policy Policy
	// Backing is optional host memory of at least Capacity bytes;
	// Buffer.Bytes returns slices of it.
	Backing []byte
	// Timeline holds the engines and events. Required: the Allocator
	// subscribes to it and learns of completions from it. New turns on
	// the Timeline's forgetting as ops complete (sync.Timeline.Retain with
	// sync.DefaultRetain) unless it is on already, so that its history
	// stays bounded with no call to Forget.
	Timeline *sasync.Timeline
	// Unbounded is planning mode: the arena grows instead of failing, and
	// Stats().HighWater is the arena size the program needs.
	Unbounded bool
	// Fit is the arena's fit strategy (zero value: the default).
	Fit arena.Fit
}

// Access is how an op uses a view's bytes; it is sync.Access, the one
// definition package trace shares.
type Access = sasync.Access

// Accesses. Both pin the bytes until the op completes: a reader must not
// see the next owner's bytes, and a writer must not write into them.
const (
	Read      Access = sasync.AccessRead
	Write     Access = sasync.AccessWrite
	ReadWrite Access = sasync.AccessReadWrite
)

// Allocator hands out arena bytes to tensors and takes them back subrange by
// subrange as their users complete. It is safe for concurrent use: one
// mutex guards all state; completions arrive from any goroutine through the
// Timeline's subscription.
type Allocator struct {
	mu  stdsync.Mutex
	cfg Config
	tl  *sasync.Timeline
	ar  *arena.Arena
	idx *liveness.Index

	holdings // the buffers the program holds; guarded by mu
	placing  // what the Alloc being placed works with; guarded by mu

	resv        []*Reservation // open reservations; resv[r.slot] == r
	internalErr error          // first failure of the arena to take bytes back
	unsubscribe func()

	slabs // where Buffers, Views and their parts are carved from
}

// holdings is what the program holds. Guarded by mu.
type holdings struct {
	nextID uint64
	// buffers lists the buffers the program holds: buffers[b.slot] == b.
	// A slot, not a linked list: adding one stores one pointer and
	// retiring one two, each a write barrier while the collector marks.
	buffers []*Buffer
	live    int64 // bytes the program holds
}

// placing is the scratch the Alloc being placed fills, reused from Alloc
// to Alloc (meaningful only under mu, within one Alloc), and the callback
// through which the liveness index returns runs to the arena. What decides
// reuse for one Alloc (its point, completions and MayWait) is not kept
// here: it is a writer, passed down as an argument.
type placing struct {
	// freeFn is giveBack, bound once so hot paths pass it without
	// allocating.
	freeFn func(ranges.Range)
	// fence is the fence of the held bytes the Alloc being placed took
	// (place, when it reports it took some).
	fence sasync.Clock
	safe  []ranges.Range // held runs safe for the point being placed (place)
	taken []ranges.Range // the parts of safe runs the placed block takes
}

// slabs holds the slabs Buffers, Views, residual fences and views' shapes
// and strides are carved from (see slab). A handle is never reused for
// another buffer or view (a stale handle cannot alias a later one); a slab
// is freed when nothing carved from it is referenced any more. bufs and
// residuals are guarded by mu, views and dims by slabMu (views are made
// without mu).
type slabs struct {
	bufs      slab[Buffer]
	residuals slab[residual] // a buffer holds one only when it took bytes whose users had not completed
	slabMu    stdsync.Mutex
	views     slab[View]
	dims      slab[int64]
}

// New returns an Allocator over a fresh arena.
func New(cfg Config) (*Allocator, error) {
	if cfg.Timeline == nil {
		return nil, fmt.Errorf("%w: Timeline is required", ErrInvalidConfig)
	}
	if !cfg.Policy.Valid() {
		return nil, fmt.Errorf("%w: policy %d", ErrInvalidConfig, cfg.Policy)
	}
	if cfg.Granule == 0 {
		cfg.Granule = arena.DefaultGranule
	}
	ar, err := arena.New(arena.Config{Capacity: cfg.Capacity, Granule: cfg.Granule, Backing: cfg.Backing, Unbounded: cfg.Unbounded, Fit: cfg.Fit})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	idx, err := liveness.New(cfg.Granule, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Timeline.Retained() == 0 {
		// The Timeline's history must not grow with every op an engine
		// that runs for days submits.
		cfg.Timeline.Retain(sasync.DefaultRetain)
	}
	a := &Allocator{cfg: cfg, tl: cfg.Timeline, ar: ar, idx: idx}
	a.bufs.full, a.views.full = buffersPerSlab, viewsPerSlab
	a.freeFn = a.giveBack
	// A closure rather than the method value: the clock is passed on by
	// pointer, not copied once more.
	a.unsubscribe = a.tl.Subscribe(func(c sasync.Clock) { a.onComplete(&c) })
	return a, nil
}

// Close stops listening to the Timeline. The Allocator must not be used
// afterwards; bytes still pending then never return.
func (a *Allocator) Close() { a.unsubscribe() }

// Timeline returns the Timeline the Allocator listens to.
func (a *Allocator) Timeline() *sasync.Timeline { return a.tl }

// Policy returns the release policy.
func (a *Allocator) Policy() Policy { return a.cfg.Policy }

// Granule returns the arena's granule.
func (a *Allocator) Granule() int64 { return a.cfg.Granule }

// giveBack returns a granule-aligned run to the arena (liveness's free
// callback). A failure means the Allocator's own bookkeeping is broken; it
// is recorded for CheckInvariants rather than silently dropped.
func (a *Allocator) giveBack(r ranges.Range) {
	a.checkArena(a.ar.Free(r.Lo, r.Len()))
}

// writer is the reuse rule of one Alloc (sasync.Event.SafeUnder): the
// point it is placed at and the completed clock when its held runs were
// listed, widened by its AllocOptions.MayWait. allocLocked makes one on
// its stack and passes it down; nothing keeps it past the Alloc.
type writer struct {
	point     *sasync.Clock
	completed sasync.Clock // set by place when it lists held runs
	mayWait   func(sasync.Event) bool
}

// safe reports whether w may take bytes ev uses.
func (w *writer) safe(ev sasync.Event) bool {
	return ev.SafeUnder(w.point, &w.completed) || (w.mayWait != nil && w.mayWait(ev))
}

func (a *Allocator) onComplete(c *sasync.Clock) {
	a.mu.Lock()
	a.idx.Complete(c, a.freeFn)
	a.unlockChecked()
}

// Alloc returns a buffer of size bytes that a writer at point at may use:
// under the fenced policies, held bytes whose pending users all
// happen-before at (or have completed) are preferred; otherwise clean arena
// space. The buffer starts on a granule boundary. When nothing fits, the
// error is a *NoSpaceError that says what is free, what is pinned and what
// to wait for.
func (a *Allocator) Alloc(size int64, at sasync.Point) (*Buffer, error) {
	return a.alloc(size, &at, nil)
}

// AllocOptions tune AllocWith. The zero value is Alloc.
type AllocOptions struct {
	// MayWait widens what the fenced policies may reuse: held bytes whose
	// pending users are not ordered before the point are taken too when
	// MayWait accepts every such user's event (users of unknown events,
	// such as a Reservation's, never are). The buffer's ops must then wait
	// for those events: Use refuses an op not ordered after them with
	// ErrUnordered, and Buffer.AppendWaits lists them for the engine to
	// wait on (sync.Timeline.Submit's waits).
	//
	// Waiting costs nothing when the event ends before the buffer's first
	// op would start anyway — an op that engine runs before it, or one
	// whose end a graph-driven engine's cost model predicts in time — and
	// delays the buffer's ops otherwise: accept only what the engine
	// expects to have ended. The after-users policies ignore MayWait (they
	// take no held bytes before their users complete).
	//
	// MayWait is called with the Allocator's lock held, once per pending
	// user considered: it must be quick and must not call the Allocator.
	MayWait func(ev sasync.Event) bool
}

// AllocWith is Alloc with options (see AllocOptions).
func (a *Allocator) AllocWith(size int64, at sasync.Point, opts AllocOptions) (*Buffer, error) {
	return a.alloc(size, &at, opts.MayWait)
}

// alloc is AllocWith with the point passed by pointer (a Point is 136
// bytes: Alloc passes its own on, not a copy).
func (a *Allocator) alloc(size int64, at *sasync.Point, mayWait func(sasync.Event) bool) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalidSize, size)
	}
	if err := a.tl.CheckPoint(*at); err != nil {
		return nil, err
	}
	a.mu.Lock()
	b, err := a.allocLocked(size, at, mayWait)
	a.unlockChecked()
	return b, err
}

// allocLocked is AllocWith once at has passed CheckPoint. Caller holds mu.
func (a *Allocator) allocLocked(size int64, at *sasync.Point, mayWait func(sasync.Event) bool) (*Buffer, error) {
	w := writer{point: &at.Clock, mayWait: mayWait}
	blk, took, err := a.place(size, &w)
	if err != nil {
		return nil, a.noSpace(size, err)
	}
	b := a.newBuffer()
	b.off, b.span = blk.Offset, blk.Size
	if took {
		// The fence's components not completed when the held bytes were
		// chosen stay with the buffer.
		for e := range a.fence {
			if a.fence[e] > w.completed[e] {
				if b.residual == nil {
					b.residual = a.newResidual()
				}
				b.residual.clock[e] = a.fence[e]
			}
		}
	}
	if r := b.residual; r != nil {
		// at passed CheckPoint: its clock is covered by the clock of every
		// op its engine submits from now on.
		r.bornEngine, r.bornSeq = at.Engine, a.tl.Submitted(at.Engine)
		r.bornCovers = r.clock.LessEq(&at.Clock)
	}
	b.size = size
	a.adopt(b, ranges.Range{Lo: b.off, Hi: b.off + b.span})
	return b, nil
}

// place chooses the bytes of a new buffer, asking before it changes
// anything: under the fenced policies the index lists the held runs safe
// for the point, and the arena answers where the block goes over its free
// space and those runs (arena.PlaceOver: reuse of safe bytes first, at the
// lowest address; else its fit, which keeps free space beside safe bytes
// whole while a tighter region exists). Then the commit takes exactly the
// chosen bytes: the free parts from the arena (AllocAt, after growing an
// unbounded arena when the block reaches past it), the held parts from the
// index, whose fence goes to a.fence (took reports that held bytes were
// taken; w.completed is then the completed clock they were chosen
// under). With nothing held, the Timeline is not asked for its completed
// clock at all. A failure of the commit means the Allocator's own
// bookkeeping broke: it is returned (and kept for CheckInvariants), never
// swallowed.
func (a *Allocator) place(size int64, w *writer) (arena.Block, bool, error) {
	a.safe = a.safe[:0]
	if a.idx.Mode().Fenced() && a.idx.HeldBytes() > 0 {
		w.completed = a.tl.CompletedClock()
		a.safe = a.idx.SafeRuns(a.safe, w.safe)
	}
	if len(a.safe) == 0 {
		blk, err := a.ar.Alloc(size)
		return blk, false, err
	}
	// Whole mode lists them piece by piece: put them in address order.
	slices.SortFunc(a.safe, func(x, y ranges.Range) int { return cmp.Compare(x.Lo, y.Lo) })
	pl, ok, err := a.ar.PlaceOver(size, a.safe)
	switch {
	case errors.Is(err, arena.ErrBadExtra):
		return arena.Block{}, false, a.internal(err)
	case err != nil:
		return arena.Block{}, false, err
	case !ok:
		blk, err := a.ar.Alloc(size) // the arena says what is free
		return blk, false, err
	}
	blk := pl.Block
	if pl.Grow {
		if err := a.ar.GrowTo(blk.End()); err != nil {
			return blk, false, a.internal(err)
		}
	}
	got := ranges.Range{Lo: blk.Offset, Hi: blk.End()}
	a.taken = a.taken[:0]
	cur := got.Lo // the free bytes [cur, next safe run) come from the arena
	for _, r := range a.safe {
		in := r.Intersect(got)
		if in.Empty() {
			continue
		}
		if cur < in.Lo {
			if err := a.ar.AllocAt(cur, in.Lo-cur); err != nil {
				return blk, false, a.internal(err)
			}
		}
		a.taken = append(a.taken, in)
		cur = in.Hi
	}
	if cur < got.Hi {
		if err := a.ar.AllocAt(cur, got.Hi-cur); err != nil {
			return blk, false, a.internal(err)
		}
	}
	if len(a.taken) > 0 {
		f, err := a.idx.TakeRanges(a.taken, a.freeFn)
		if err != nil {
			return blk, false, a.internal(err)
		}
		a.fence = f
		return blk, true, nil
	}
	return blk, false, nil
}

// internal records a failure of the Allocator's own bookkeeping (kept for
// CheckInvariants) and returns it for the caller to report.
func (a *Allocator) internal(err error) error {
	a.checkArena(err)
	return a.internalErr
}

// checkArena records the first failure of the Allocator's own bookkeeping
// with the arena or the index (CheckInvariants reports it).
func (a *Allocator) checkArena(err error) {
	if err != nil {
		a.recordInternal(err) // apart, so that checkArena is inlined
	}
}

// recordInternal is checkArena for a failure.
func (a *Allocator) recordInternal(err error) {
	if a.internalErr == nil {
		a.internalErr = fmt.Errorf("subarena: internal: %w", err)
	}
}

// adopt gives b an id and the bytes r, and lists it among the buffers the
// program holds.
func (a *Allocator) adopt(b *Buffer, r ranges.Range) {
	a.nextID++
	b.id = a.nextID
	b.initWhole()
	b.live.Init(b.liveRuns[:])
	b.live.Add(r)
	a.live += r.Len()
	b.slot = len(a.buffers)
	a.buffers = append(a.buffers, b)
}

// listed reports whether b is the very Buffer adopt listed, not a copy of
// it: a copy (a Buffer dereferenced and copied by value) has the same
// slot, but the list holds the original there. A handle copied and used
// after the original retired, or used in its stead, would free the same
// bytes twice. Caller holds mu; b is not released.
func (a *Allocator) listed(b *Buffer) bool {
	return uint(b.slot) < uint(len(a.buffers)) && a.buffers[b.slot] == b
}

// retire takes a buffer whose bytes the program no longer holds off the
// list; the last listed buffer takes its slot.
func (a *Allocator) retire(b *Buffer) {
	n := len(a.buffers) - 1
	if last := a.buffers[n]; last != b {
		a.buffers[b.slot], last.slot = last, b.slot
	}
	a.buffers[n] = nil
	a.buffers = a.buffers[:n]
	b.slot = -1
}

func (a *Allocator) noSpace(size int64, cause error) error {
	if !errorsIsNoSpace(cause) {
		return cause
	}
	g := a.cfg.Granule
	req := ranges.Granule(g).Up(size)
	st := a.ar.Stats()
	e := &NoSpaceError{Requested: req, TotalFree: st.Free, LargestFree: st.LargestFree, Held: a.idx.HeldBytes()}
	e.Pending, _ = a.idx.PendingBytes()
	// The held run whose pending work is smallest decides what to wait for.
	held := a.idx.Held().AlignIn(g)
	best := int64(-1)
	completed := a.tl.CompletedClock()
	for _, r := range held.Runs() {
		if r.Len() < req {
			continue
		}
		fence, unknown := a.idx.Fence(r)
		if unknown {
			continue
		}
		var outstanding, most int64
		var wait sasync.Event
		for en := range fence {
			if fence[en] == 0 {
				continue
			}
			left := int64(fence[en]) - int64(completed[en])
			if left > 0 {
				outstanding += left
			}
			// The event with the most work still ahead of it; when every
			// one has completed (its news is on its way to the
			// Allocator), any of them: waiting returns at once.
			if wait.IsZero() || left > most {
				most, wait = left, sasync.Event{Engine: sasync.EngineID(en), Seq: fence[en]}
			}
		}
		if wait.IsZero() {
			continue
		}
		if best < 0 || outstanding < best {
			best = outstanding
			e.WaitFor, e.Wait, e.HasWait = fence, wait, true
		}
	}
	return e
}

// Use records that the op behind ev uses exactly v's bytes until ev
// completes. ev must have been submitted on the Timeline; an event that has
// already completed is accepted and pins nothing (the bytes were the
// program's while it ran). Bytes the buffer took over fenced may only be
// used by ops submitted after the Alloc that happen-after the fence.
func (a *Allocator) Use(v *View, ev sasync.Event, acc Access) error {
	if acc == 0 || acc&^ReadWrite != 0 {
		return fmt.Errorf("%w: %d", ErrInvalidAccess, acc)
	}
	a.mu.Lock()
	err := a.useLocked(v, ev)
	a.unlockChecked()
	return err
}

// useLocked is Use once acc has been checked. Caller holds mu.
func (a *Allocator) useLocked(v *View, ev sasync.Event) error {
	cover, _, err := a.heldCover(v)
	if err != nil {
		return err
	}
	b := v.buf
	done, err := a.checkOrder(b, ev)
	if err != nil {
		return err
	}
	if done {
		return nil
	}
	_, err = a.idx.AddUser(ev, false, cover)
	return err
}

// checkOrder validates ev for a use of b and reports whether it has
// already completed. Bytes b took over fenced may only be used by ops that
// happen-after the residual fence: such an op cannot start before the
// previous owner's users complete, whenever it was submitted.
// Caller holds mu.
func (a *Allocator) checkOrder(b *Buffer, ev sasync.Event) (done bool, err error) {
	done, err = a.tl.Status(ev)
	if err != nil || b.residual == nil {
		return done, err
	}
	if done && b.bornOrdered(ev) {
		return true, nil // a completed op its clock may be forgotten for
	}
	ordered, err := a.tl.OrderedAfter(&b.residual.clock, ev)
	if err != nil {
		return false, err
	}
	if !ordered {
		return false, fmt.Errorf("%w: %v does not happen-after the fence of buffer %d", ErrUnordered, ev, b.id)
	}
	return done, nil
}

// UseBuffer is Use of the buffer's Whole view.
func (a *Allocator) UseBuffer(b *Buffer, ev sasync.Event, acc Access) error {
	if b == nil {
		return fmt.Errorf("%w: nil buffer", ErrForeign)
	}
	return a.Use(b.Whole(), ev, acc)
}

// checkView validates that v is a view of a live buffer of this Allocator
// and returns its exact or conservative covered bytes. Caller holds mu.
func (a *Allocator) checkView(v *View) ([]ranges.Range, error) {
	if v == nil || v.buf == nil {
		return nil, fmt.Errorf("%w: nil view", ErrForeign)
	}
	if v.buf.a != a {
		return nil, fmt.Errorf("%w: buffer %d", ErrForeign, v.buf.id)
	}
	if v.buf.isReleased() {
		return nil, fmt.Errorf("%w: buffer %d", ErrReleased, v.buf.id)
	}
	if !a.listed(v.buf) || (v.depth == 0 && v != &v.buf.whole) {
		return nil, fmt.Errorf("%w: buffer %d: a copy of a handle", ErrForeign, v.buf.id)
	}
	cover, _, err := v.coverLocked()
	if err != nil {
		return nil, err
	}
	return cover, nil
}

// heldCover is checkView for an operation that adds a user to v's bytes or
// hands them on: every byte must still be held by the program
// (ErrReleased) and free of open claims (ErrClaimed). part reports that
// the cover's runs are new, the held part of a superset (heldPartLocked),
// rather than the view's own. Caller holds mu.
func (a *Allocator) heldCover(v *View) (cover []ranges.Range, part bool, err error) {
	cover, err = a.checkView(v)
	if err != nil {
		return nil, false, err
	}
	b := v.buf
	if !b.wholeLive() { // else every byte is held: nothing to check run by run
		if err := b.checkLiveLocked(cover); err != nil {
			if v.coverOK {
				return nil, false, err
			}
			held, err := b.heldPartLocked(v, cover)
			if err != nil {
				return nil, false, err
			}
			cover, part = held.Runs(), true
		}
	}
	if b.claims != nil && b.claimOverlapping(cover) != nil {
		return nil, false, fmt.Errorf("%w: buffer %d", ErrClaimed, b.id)
	}
	return cover, part, nil
}

// heldPartLocked serves a view indexed by a superset of its bytes (more
// than CoverBudget runs) whose superset reaches bytes b no longer holds:
// it reports ErrReleased if the view itself reads one of those bytes, and
// otherwise returns the superset cut down to the bytes b holds, a new set
// that still contains every byte of the view. The view's exact bytes are
// listed once, up to heldCheckBudget runs, and each run must be held; a
// view with more runs than that has each run of the superset beyond the
// held bytes tested against its exact layout instead (strided.Overlap),
// which costs more per run but needs no list of the view's runs. Only such
// views after a Discard take this path. Caller holds mu.
func (b *Buffer) heldPartLocked(v *View, runs []ranges.Range) (ranges.Set, error) {
	cover := setOf(runs)
	abs := v.layout()
	abs.Offset += b.off
	var exact ranges.Set
	if ok, err := abs.AppendCover(&exact, heldCheckBudget); err == nil && ok {
		for _, r := range exact.Runs() {
			if !b.live.ContainsRange(r) {
				return ranges.Set{}, b.discardedErr(r)
			}
		}
	} else {
		gone := ranges.Subtract(&cover, &b.live)
		for _, r := range gone.Runs() {
			if strided.Overlap(abs, strided.Bytes(r.Lo, r.Len()), CoverBudget) != strided.Disjoint {
				return ranges.Set{}, b.discardedErr(r)
			}
		}
	}
	return ranges.Intersect(&cover, &b.live), nil
}

// heldCheckBudget is the number of runs up to which heldPartLocked lists a
// view's exact bytes: 64·CoverBudget runs, 64 MiB of ranges.Range.
const heldCheckBudget = 64 * CoverBudget

// discardedErr is ErrReleased for bytes r of b the program let go of.
func (b *Buffer) discardedErr(r ranges.Range) error {
	return fmt.Errorf("%w: bytes %v of buffer %d were discarded, donated or claimed", ErrReleased, r, b.id)
}

func describeUser(ev sasync.Event, unknown bool) string {
	if unknown {
		return "an unknown user"
	}
	return ev.String()
}

func errorsIsNoSpace(err error) bool { return errors.Is(err, arena.ErrNoSpace) }
