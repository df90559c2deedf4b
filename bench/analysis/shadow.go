package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// shadowBuf is a buffer of the shadow allocator.
type shadowBuf struct {
	Index           int // program buffer index
	Off, Span, Size int64
	Live            ranges.Set
	Residual        sasync.Clock
	HasResidual     bool
	Released        bool
}

// hint is what a graph-driven engine could tell the allocator about a
// buffer at Alloc: who writes it, and when it dies.
type hint struct {
	Buffer    int
	Engine    int
	Step      int   // the alloc step
	HostTime  int64 // host time at the alloc
	DeathStep int   // program step of its last release or discard (never: held)
	// Schedule estimates: when its first use starts and its last use ends.
	FirstUse, LastUse int64
	UserEngines       uint32
}

// placer chooses where a block goes. In the arena, the lent runs (held bytes
// safe for this writer) are free for the duration of the call, coalesced
// with the clean space beside them.
type placer interface {
	Name() string
	// Place returns the offset of a block of n bytes (a granule multiple),
	// which must be free in s.Ar, or -1: the shadow's default (reuseAt, then
	// the arena's fit, over the freed lent runs). With a nil placer the
	// shadow places as the Allocator does (arena.PlaceOver, nothing freed).
	Place(s *shadow, n int64, lent []ranges.Range, h *hint) int64
}

// shadow is the root package's Allocator, reproduced on the public arena,
// liveness and sync packages, single-threaded, with the placement decision
// open to a placer. With a nil placer and an unbounded arena it makes
// exactly the Allocator's decisions (TestMirror checks it against
// replay.Run, offset by offset).
type shadow struct {
	G      int64
	Ar     *arena.Arena
	Idx    *liveness.Index
	Tl     *sasync.Timeline
	Placer placer
	// WaitOK, when set, also makes safe for a writer the held bytes whose
	// pending users it accepts: the new owner's ops must then wait for the
	// buffer's fence (shadowBuf.Residual), which the driver adds to them.
	WaitOK func(ev sasync.Event) bool
	// WaitMatch, when > 0, keeps only the runs WaitOK adds that are at most
	// WaitMatch times the request: waited-for bytes go to buffers of about
	// their size, not split for smaller ones.
	WaitMatch float64
	fenced    bool

	free                     func(ranges.Range)
	safePoint, safeCompleted sasync.Clock
	lent, taken              []ranges.Range
	regions                  []arena.Block
	owner                    []int32 // per granule: the buffer last placed over it, -1 never
	err                      error
	unsub                    func()
}

// boundedCap is the capacity of the arena a placer works in: large enough
// never to run out, so that the high-water mark is the measure.
const boundedCap = 1 << 32

// newShadow returns a shadow with the given policy mode over tl. With a
// placer the arena is bounded at boundedCap (a placer needs every offset
// addressable); without, it is unbounded, as in replay.Run.
func newShadow(tl *sasync.Timeline, g int64, mode liveness.Mode, fit arena.Fit, pl placer) (*shadow, error) {
	cfg := arena.Config{Granule: g, Unbounded: true, Fit: fit}
	if pl != nil {
		cfg = arena.Config{Granule: g, Capacity: boundedCap, Fit: fit}
	}
	ar, err := arena.New(cfg)
	if err != nil {
		return nil, err
	}
	idx, err := liveness.New(g, mode)
	if err != nil {
		return nil, err
	}
	s := &shadow{G: g, Ar: ar, Idx: idx, Tl: tl, Placer: pl, fenced: mode.Fenced()}
	s.free = func(r ranges.Range) { s.check(s.Ar.Free(r.Lo, r.Len())) }
	s.unsub = tl.Subscribe(func(c sasync.Clock) { s.Idx.Complete(&c, s.free) })
	return s, nil
}

// Own records buffer b as the owner of [off, off+n).
func (s *shadow) Own(off, n int64, b int) {
	lo, hi := off/s.G, (off+n+s.G-1)/s.G
	for int64(len(s.owner)) < hi {
		s.owner = append(s.owner, -1)
	}
	for g := lo; g < hi; g++ {
		s.owner[g] = int32(b)
	}
}

// Owner returns the buffer last placed over the granule at off, or -1.
func (s *shadow) Owner(off int64) int {
	g := off / s.G
	if off < 0 || g >= int64(len(s.owner)) {
		return -1
	}
	return int(s.owner[g])
}

// Close unsubscribes from the Timeline.
func (s *shadow) Close() { s.unsub() }

// Err returns the first internal failure.
func (s *shadow) Err() error { return s.err }

func (s *shadow) check(err error) {
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("shadow: internal: %w", err)
	}
}

func (s *shadow) safeFn(ev sasync.Event) bool {
	return ev.Seq <= s.safePoint[ev.Engine] || ev.Seq <= s.safeCompleted[ev.Engine] ||
		(s.WaitOK != nil && s.WaitOK(ev))
}

// SafeRuns returns the held runs safe for a writer at pt now.
func (s *shadow) SafeRuns(pt *sasync.Point) []ranges.Range {
	if !s.fenced {
		return nil
	}
	s.safePoint, s.safeCompleted = pt.Clock, s.Tl.CompletedClock()
	return s.Idx.SafeRuns(nil, s.safeFn)
}

// HighWater is the arena's high-water mark.
func (s *shadow) HighWater() int64 { return s.Ar.Stats().HighWater }

// Alloc is Allocator.Alloc.
func (s *shadow) Alloc(size int64, at sasync.Point, h *hint) (*shadowBuf, error) {
	completed := s.Tl.CompletedClock()
	blk, fence, err := s.place(size, &at, &completed, h)
	if err != nil {
		return nil, err
	}
	b := &shadowBuf{Off: blk.Offset, Span: blk.Size, Size: size}
	for e := range fence {
		if fence[e] > completed[e] {
			b.Residual[e] = fence[e]
			b.HasResidual = true
		}
	}
	b.Live.Add(ranges.Range{Lo: b.Off, Hi: b.Off + b.Span})
	return b, nil
}

func (s *shadow) place(size int64, at *sasync.Point, completed *sasync.Clock, h *hint) (arena.Block, sasync.Clock, error) {
	var fence sasync.Clock
	s.lent = s.lent[:0]
	n := (size + s.G - 1) &^ (s.G - 1)
	if s.fenced {
		s.safePoint, s.safeCompleted = at.Clock, *completed
		s.lent = s.Idx.SafeRuns(s.lent, s.safeFn)
		if s.WaitOK != nil && s.WaitMatch > 0 {
			s.lent = s.matchWaited(s.lent, n)
		}
	}
	if len(s.lent) == 0 {
		blk, err := s.choose(size, n, h)
		return blk, fence, err
	}
	if s.Placer == nil {
		return s.placeOver(size)
	}
	for _, r := range s.lent {
		s.check(s.Ar.Free(r.Lo, r.Len()))
	}
	blk, err := s.choose(size, n, h)
	got := ranges.Range{Lo: blk.Offset, Hi: blk.End()}
	for _, r := range s.lent {
		if err != nil {
			s.check(s.Ar.AllocAt(r.Lo, r.Len()))
			continue
		}
		if left := (ranges.Range{Lo: r.Lo, Hi: min(r.Hi, got.Lo)}); !left.Empty() {
			s.check(s.Ar.AllocAt(left.Lo, left.Len()))
		}
		if right := (ranges.Range{Lo: max(r.Lo, got.Hi), Hi: r.Hi}); !right.Empty() {
			s.check(s.Ar.AllocAt(right.Lo, right.Len()))
		}
	}
	if err != nil {
		return blk, fence, err
	}
	s.taken = s.taken[:0]
	for _, r := range s.lent {
		if in := r.Intersect(got); !in.Empty() {
			s.taken = append(s.taken, in)
		}
	}
	if len(s.taken) > 0 {
		f, terr := s.Idx.TakeRanges(s.taken, s.free)
		s.check(terr)
		fence = f
	}
	return blk, fence, nil
}

// placeOver is the Allocator's placement with no placer: the arena's
// PlaceOver answers over the clean space and the lent runs (not freed),
// and the commit takes the clean parts with AllocAt and the lent parts
// with TakeRanges.
func (s *shadow) placeOver(size int64) (arena.Block, sasync.Clock, error) {
	var fence sasync.Clock
	slices.SortFunc(s.lent, func(x, y ranges.Range) int { return cmp.Compare(x.Lo, y.Lo) })
	pl, ok, err := s.Ar.PlaceOver(size, s.lent)
	if err != nil {
		return arena.Block{}, fence, err
	}
	if !ok {
		blk, err := s.Ar.Alloc(size)
		return blk, fence, err
	}
	if pl.Grow {
		s.check(s.Ar.GrowTo(pl.End()))
	}
	got := ranges.Range{Lo: pl.Offset, Hi: pl.End()}
	s.taken = s.taken[:0]
	cur := got.Lo
	for _, r := range s.lent {
		if in := r.Intersect(got); !in.Empty() {
			if cur < in.Lo {
				s.check(s.Ar.AllocAt(cur, in.Lo-cur))
			}
			s.taken = append(s.taken, in)
			cur = in.Hi
		}
	}
	if cur < got.Hi {
		s.check(s.Ar.AllocAt(cur, got.Hi-cur))
	}
	if len(s.taken) > 0 {
		f, terr := s.Idx.TakeRanges(s.taken, s.free)
		s.check(terr)
		fence = f
	}
	return pl.Block, fence, nil
}

// matchWaited drops from lent the parts that only WaitOK made safe when
// they lie in a run longer than WaitMatch × n.
func (s *shadow) matchWaited(lent []ranges.Range, n int64) []ranges.Range {
	w := s.WaitOK
	s.WaitOK = nil
	ordered := s.Idx.SafeRuns(nil, s.safeFn)
	s.WaitOK = w
	var keep ranges.Set
	for _, r := range ordered {
		keep.Add(r)
	}
	var all ranges.Set
	for _, r := range lent {
		all.Add(r)
	}
	extra := ranges.Subtract(&all, &keep)
	for _, r := range extra.Runs() {
		if float64(r.Len()) <= s.WaitMatch*float64(n) {
			keep.Add(r)
		}
	}
	return append(lent[:0], keep.Runs()...)
}

// choose allocates the block in the arena: the placer's offset, else
// reuseAt over the lent runs, else the arena's fit.
func (s *shadow) choose(size, n int64, h *hint) (arena.Block, error) {
	if s.Placer != nil {
		if off := s.Placer.Place(s, n, s.lent, h); off >= 0 {
			if err := s.Ar.AllocAt(off, n); err != nil {
				return arena.Block{}, fmt.Errorf("placer %s: block [%d,+%d): %w", s.Placer.Name(), off, n, err)
			}
			return arena.Block{Offset: off, Size: n}, nil
		}
	}
	if len(s.lent) > 0 {
		if blk, ok := s.reuseAt(n, s.lent); ok {
			return blk, nil
		}
	}
	return s.Ar.Alloc(size)
}

// ReuseAtOffset is the Allocator's reuseAt decision without allocating: the
// lowest free region start whose first n bytes reach a lent run, or -1.
func (s *shadow) ReuseAtOffset(n int64, lent []ranges.Range) int64 {
	best := int64(-1)
	for _, r := range lent {
		reg, ok := s.Ar.FreeRegionAt(r.Lo)
		if !ok || reg.Size < n || r.Lo >= reg.Offset+n {
			continue
		}
		if best < 0 || reg.Offset < best {
			best = reg.Offset
		}
	}
	return best
}

func (s *shadow) reuseAt(n int64, lent []ranges.Range) (arena.Block, bool) {
	off := s.ReuseAtOffset(n, lent)
	if off < 0 {
		return arena.Block{}, false
	}
	if err := s.Ar.AllocAt(off, n); err != nil {
		s.check(err)
		return arena.Block{}, false
	}
	return arena.Block{Offset: off, Size: n}, true
}

// FreeRegions returns the arena's free regions in address order (the
// shared slice is overwritten by the next call).
func (s *shadow) FreeRegions() []arena.Block {
	s.regions = s.Ar.AppendFreeRegions(s.regions[:0])
	return s.regions
}

// wouldGrow reports whether no free region, clean bytes and held bytes safe
// for pt together, holds size bytes below the high-water mark.
func (s *shadow) wouldGrow(size int64, pt *sasync.Point) bool {
	n := (size + s.G - 1) &^ (s.G - 1)
	hwm := s.HighWater()
	var free ranges.Set
	for _, r := range s.FreeRegions() {
		if r.Offset < hwm {
			free.Add(ranges.Range{Lo: r.Offset, Hi: min(r.End(), hwm)})
		}
	}
	for _, r := range s.SafeRuns(pt) {
		free.Add(r)
	}
	for _, r := range free.Runs() {
		if r.Len() >= n {
			return false
		}
	}
	return true
}

// Use is Allocator.Use of the buffer-relative bytes cover.
func (s *shadow) Use(b *shadowBuf, cover *ranges.Set, ev sasync.Event) error {
	done := !ev.IsZero() && s.Tl.Completed(ev)
	if b.HasResidual {
		ok, err := s.Tl.OrderedAfter(&b.Residual, ev)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("shadow: %v does not happen-after the fence of buffer %d", ev, b.Index)
		}
	}
	if done {
		return nil
	}
	abs := cover.Clone()
	if err := abs.Translate(b.Off); err != nil {
		return err
	}
	for _, r := range abs.Runs() {
		if !b.Live.ContainsRange(r) {
			return fmt.Errorf("shadow: use of released bytes %v of buffer %d", r, b.Index)
		}
	}
	_, err := s.Idx.AddUser(ev, false, abs.Runs())
	return err
}

// Release is Allocator.Release (a no-op on a retired buffer).
func (s *shadow) Release(b *shadowBuf) error {
	if b.Released {
		return nil
	}
	if err := s.Idx.Release(&b.Live, s.free); err != nil {
		return err
	}
	b.Live.Reset()
	b.Released = true
	return nil
}

// Discard is Allocator.Discard of buffer-relative bytes (skipped, as the
// replay skips the Allocator's refusal, when the cover is not exact or
// nothing of it is held).
func (s *shadow) Discard(b *shadowBuf, cover *ranges.Set, exact bool) error {
	if b.Released || !exact {
		return nil
	}
	abs := cover.Clone()
	if err := abs.Translate(b.Off); err != nil {
		return err
	}
	part := ranges.Intersect(&abs, &b.Live)
	if part.IsEmpty() {
		return nil
	}
	if s.takesLastRequested(b, &part) {
		part = b.Live.Clone()
	}
	if err := s.Idx.Release(&part, s.free); err != nil {
		return err
	}
	b.Live.RemoveSet(&part)
	if b.Live.IsEmpty() {
		b.Released = true
	}
	return nil
}

func (s *shadow) takesLastRequested(b *shadowBuf, bytes *ranges.Set) bool {
	end := b.Off + b.Size
	for _, r := range b.Live.Runs() {
		r.Hi = min(r.Hi, end)
		if !r.Empty() && !bytes.ContainsRange(r) {
			return false
		}
	}
	return true
}

// errRefused is Donate's refusal.
var errRefused = errors.New("shadow: donation refused")

// Donate is Allocator.Donate of the buffer-relative dense run cover of b.
func (s *shadow) Donate(b *shadowBuf, cover *ranges.Set, exact bool, ev sasync.Event) (*shadowBuf, error) {
	if b.Released || !exact || cover.NumRuns() != 1 {
		return nil, errRefused
	}
	r := cover.Runs()[0]
	r.Lo += b.Off
	r.Hi += b.Off
	if !b.Live.ContainsRange(r) {
		return nil, errRefused
	}
	evClock, err := s.Tl.EventClock(ev)
	if err != nil {
		return nil, err
	}
	ok := true
	s.Idx.Users(r, func(_ liveness.UserID, uev sasync.Event, unknown bool) bool {
		if unknown || !evClock.Covers(uev) {
			ok = false
		}
		return ok
	})
	if !ok {
		return nil, errRefused
	}
	nb := &shadowBuf{Off: r.Lo, Size: r.Len(), Span: r.Len()}
	nb.Live.Add(r)
	b.Live.Remove(r)
	if b.Live.IsEmpty() {
		b.Released = true
	}
	return nb, nil
}
