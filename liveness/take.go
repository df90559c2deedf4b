package liveness

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// SafeRuns appends to dst the held bytes a writer may take now: maximal
// granule-aligned runs of fully held granules whose pending users are all
// known and satisfy safe, in address order. safe must be monotone in the
// seq — if it holds for e#s it holds for every earlier op of e — as every
// reuse rule is (sasync.Event.SafeUnder): only each engine's latest user
// of a key is asked. In whole mode a piece qualifies only as a whole
// (every user of the piece safe). It returns nil in the after-users and
// unsafe modes, where nothing is taken before its users complete.
//
// A pass looks only at what may have changed since the last one (see
// safeScan): held bytes released or unpinned since (new pieces, in whole
// mode), what it returned last time, and what it found pinned whose
// blocking user has become safe or completed. Held bytes that stay pinned
// by users a writer keeps finding unsafe — a copy engine nothing waits
// for — cost nothing per pass, so a program of n steps costs O(n log n)
// in all rather than O(n) per Alloc.
func (x *Index) SafeRuns(dst []ranges.Range, safe func(sasync.Event) bool) []ranges.Range {
	if !x.mode.Fenced() || x.held.IsEmpty() {
		return dst
	}
	if x.mode.Whole() {
		return x.safeRunsWhole(dst, safe)
	}
	return x.safeRunsSubrange(dst, safe)
}

// safeRunsWhole is SafeRuns in whole mode: the pieces a pass looks at are
// the ones it returned last time, the new ones, the ones whose bytes were
// taken in part, and the ones whose blocking user the writer accepts or
// that completed; every piece is looked at when a user was removed. A
// piece found pinned stays out, at no cost, while its blocking user stays
// refused and pending. The pieces come in the order they were looked at.
func (x *Index) safeRunsWhole(dst []ranges.Range, safe func(sasync.Event) bool) []ranges.Range {
	s := &x.scan
	if s.allPieces || (s.nblocked > 1024 && s.nblocked > 4*len(x.pieces)) {
		for e := range s.blocked {
			s.blocked[e] = s.blocked[e][:0]
		}
		s.nblocked = 0
		s.cand = s.cand[:0]
		for i := range x.pieces {
			s.cand = append(s.cand, x.pieces[i].id)
		}
		s.allPieces = false
	}
	s.unblock(safe, true)
	slices.Sort(s.cand)
	for i, id := range s.cand {
		if i > 0 && s.cand[i-1] == id {
			continue
		}
		at, ok := s.pieceAt[id]
		if !ok {
			continue // gone back to the arena, or taken
		}
		p := &x.pieces[at]
		e, seq, refused := x.pieceWitness(&p.bytes, safe)
		if refused {
			s.blocked[e] = pushBlocked(s.blocked[e], blocked{seq: seq, piece: id})
			s.nblocked++
			continue
		}
		alignInInto(&x.nearHeld, &p.bytes, x.granule)
		dst = append(dst, x.nearHeld.Runs()...)
		s.next = append(s.next, keptRun{piece: id})
	}
	s.cand = s.cand[:0]
	for _, k := range s.next {
		s.cand = append(s.cand, k.piece)
	}
	s.next = s.next[:0]
	return dst
}

// pieceWitness reports whether a pending user over the bytes of a piece
// refuses a writer, and names the first such user's engine and seq found
// (unknownEngine and 0 for an unknown user).
func (x *Index) pieceWitness(bytes *ranges.Set, safe func(sasync.Event) bool) (e int, seq sasync.Seq, refused bool) {
	for _, r := range bytes.Runs() {
		x.tree.Overlapping(r.Lo, r.Hi, func(g *group) bool {
			e, seq, refused = g.unsafeWitness(safe)
			return !refused
		})
		if refused {
			return e, seq, true
		}
	}
	return 0, 0, false
}

// safeRunsSubrange is SafeRuns in subrange mode. Runs the last pass
// returned are taken again on their fence alone when the writer accepts
// it (the keys over them can only have lost users since, unless a user
// was added there, which reopens them); every other candidate is looked
// at key by key.
func (x *Index) safeRunsSubrange(dst []ranges.Range, safe func(sasync.Event) bool) []ranges.Range {
	s := &x.scan
	s.bound(x)
	s.unblock(safe, false)
	gr := ranges.Granule(x.granule)
	// Returned runs that a candidate overlaps, or whose fence the writer
	// refuses, become candidates; the others are returned again, as far
	// as their granules are still fully held.
	for _, k := range s.kept {
		if _, ok := s.open.Overlaps(k.r); ok || !s.accepts(&k, safe) {
			s.open.Add(k.r)
			continue
		}
		for _, h := range x.held.RunsOverlapping(k.r) {
			if c := gr.In(h).Intersect(k.r); !c.Empty() {
				s.next = append(s.next, keptRun{r: c, fence: k.fence, engines: k.engines})
			}
		}
	}
	for _, o := range s.open.Runs() {
		for _, h := range x.held.RunsOverlapping(o) {
			c := gr.In(h).Intersect(o)
			if c.Empty() {
				continue
			}
			x.pinned.Reset()
			s.cur = blocked{}
			var k keptRun
			x.tree.Overlapping(c.Lo, c.Hi, func(g *group) bool {
				if e, seq, ok := g.unsafeWitness(safe); ok {
					r := ranges.Range{Lo: g.lo, Hi: g.hi}.Intersect(c)
					x.pinned.Add(r)
					s.pin(e, seq, gr.Out(r))
				} else {
					g.joinFence(&k.fence)
					k.engines |= g.engines
				}
				return true
			})
			s.flush()
			for _, r := range x.unpinnedOf(c) {
				k.r = r
				s.next = append(s.next, k)
			}
		}
	}
	// What this pass returns is all that is not known pinned: the next
	// pass starts from it, and from nothing else but what changes. Runs
	// returned again and runs looked at may touch: they are one run.
	s.open.Reset()
	if !slices.IsSortedFunc(s.next, compareKept) {
		slices.SortFunc(s.next, compareKept)
	}
	s.kept = s.kept[:0]
	for _, k := range s.next {
		if n := len(s.kept); n > 0 && s.kept[n-1].r.Hi == k.r.Lo {
			last := &s.kept[n-1]
			last.r.Hi = k.r.Hi
			last.fence.Join(&k.fence)
			last.engines |= k.engines
			continue
		}
		s.kept = append(s.kept, k)
	}
	s.next = s.next[:0]
	for _, k := range s.kept {
		dst = append(dst, k.r)
	}
	return dst
}

func compareKept(a, b keptRun) int { return cmp.Compare(a.r.Lo, b.r.Lo) }

// keptRun is a run a SafeRuns pass returned, with a fence no less than
// that of the pending users over it then: the join of the keys' latest
// seqs (fence) on the engines they use (engines).
type keptRun struct {
	r       ranges.Range
	fence   sasync.Clock
	engines uint32
	piece   uint64 // whole mode: the piece returned (and nothing else)
}

// accepts reports whether every user k's fence stands for is safe or
// completed: then a writer that safe describes may take k's bytes, as
// long as no user was added over them since.
func (s *safeScan) accepts(k *keptRun, safe func(sasync.Event) bool) bool {
	for m := k.engines; m != 0; m &= m - 1 {
		e := bits.TrailingZeros32(m)
		if seq := k.fence[e]; seq > s.done[e] && !safe(sasync.Event{Engine: sasync.EngineID(e), Seq: seq}) {
			return false
		}
	}
	return true
}

// added reopens the runs of kept that a new user's runs (normalized)
// touch: their fence no longer bounds the users over them. A user whose
// runs lie outside the span of kept costs two comparisons; else the two
// sorted lists are merged, or, when kept is much the longer, each run is
// looked up in it.
func (s *safeScan) added(runs []ranges.Range) {
	n := len(s.kept)
	if n == 0 || len(runs) == 0 || runs[len(runs)-1].Hi <= s.kept[0].r.Lo || runs[0].Lo >= s.kept[n-1].r.Hi {
		return
	}
	j := 0
	for _, r := range runs {
		if n > 8 && n > 2*len(runs) {
			j = s.firstKeptEndingAfter(r.Lo)
		}
		for j < n && s.kept[j].r.Hi <= r.Lo {
			j++
		}
		if j == n {
			return
		}
		for i := j; i < n && s.kept[i].r.Lo < r.Hi; i++ {
			s.open.Add(s.kept[i].r)
		}
	}
}

// firstKeptEndingAfter returns the index of the first kept run that ends
// after x (len(kept) if none).
func (s *safeScan) firstKeptEndingAfter(x int64) int {
	lo, hi := 0, len(s.kept)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.kept[m].r.Hi <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// unsafeWitness reports whether g refuses a writer — an unknown user, or
// a latest user on some engine that safe refuses — and names the engine
// and seq that refused (unknownEngine and 0 for an unknown user).
func (g *group) unsafeWitness(safe func(sasync.Event) bool) (e int, seq sasync.Seq, refused bool) {
	if g.unknown > 0 {
		return unknownEngine, 0, true
	}
	for m := g.engines; m != 0; m &= m - 1 {
		e := bits.TrailingZeros32(m)
		if !safe(sasync.Event{Engine: sasync.EngineID(e), Seq: g.last[e]}) {
			return e, g.last[e], true
		}
	}
	return 0, 0, false
}

// unknownEngine is the heap of safeScan.blocked that holds the runs an
// unknown user pins: no writer is ever safe for them.
const unknownEngine = sasync.MaxEngines

// blocked is a run of granules a SafeRuns pass found pinned: every
// granule of r touches a key with a pending user on engine e (the heap it
// sits in) whose seq is at least seq, a user some writer refused. While
// that holds, no writer that refuses e#seq may take any of r, and by
// monotonicity a writer that refuses the smallest seq of an engine's heap
// refuses all of that heap.
//
// In whole mode an entry stands for a piece (named by its id; r is
// unused): some byte of it is under such a user.
type blocked struct {
	r     ranges.Range
	seq   sasync.Seq
	piece uint64
}

// safeScan is what SafeRuns keeps from pass to pass. In subrange mode
// every fully held granule is in open (to be looked at key by key), in a
// run of kept (returned by the last pass, with a fence that bounds the
// users over it: a user added there moves it to open), or in a run of
// blocked[e] whose claim holds: its blocking users are pending (users
// that complete raise done, and a run with seq <= done[e] is looked at
// again; a removed user's bytes go back to open), so until a writer
// accepts e#seq the granule stays pinned for it. A pass first moves the
// runs of each engine's heap that its writer accepts (or that done
// covers) to open, returns the kept runs whose fence the writer accepts,
// looks at the held bytes of open, and keeps what it returned.
type safeScan struct {
	open       ranges.Set // granule-aligned
	kept, next []keptRun  // in address order
	blocked    [sasync.MaxEngines + 1][]blocked
	nblocked   int
	done       sasync.Clock // per engine, the latest seq Complete has completed to
	cur        blocked      // the run being gathered by pin
	curEngine  int

	// Whole fenced mode: the ids of the pieces the next pass looks at
	// (cand; ids of pieces gone are skipped), where each piece is in
	// x.pieces by id (pieceAt), the id the next new piece gets, and
	// whether a user was removed since the last pass (allPieces: every
	// piece is looked at).
	cand      []uint64
	pieceAt   map[uint64]int
	nextPiece uint64
	allPieces bool
}

// reopen makes the granules r touches candidates of the next pass: bytes
// just released, or just unpinned by a removed user.
func (s *safeScan) reopen(r ranges.Range, granule int64) {
	s.open.Add(ranges.Granule(granule).Out(r))
}

// pieceAdded gives x.pieces[i], just made, an id and makes it a candidate
// of the next pass (whole fenced mode only).
func (s *safeScan) pieceAdded(x *Index, i int) {
	if x.mode != WholeFenced {
		return
	}
	if s.pieceAt == nil {
		s.pieceAt = make(map[uint64]int)
	}
	s.nextPiece++
	id := s.nextPiece
	x.pieces[i].id = id
	s.pieceAt[id] = i
	s.cand = append(s.cand, id)
}

// pieceDropped records that the piece at x.pieces[last] is gone and the
// one that was there is now at i.
func (s *safeScan) pieceDropped(x *Index, i, last int) {
	if x.mode != WholeFenced {
		return
	}
	delete(s.pieceAt, x.pieces[last].id)
	if i != last {
		s.pieceAt[x.pieces[i].id] = i
	}
}

// completed records that Complete completed users of engine e up to seq.
func (s *safeScan) completed(e int, seq sasync.Seq) {
	s.done[e] = max(s.done[e], seq)
}

// bound starts over from all held bytes once the heaps hold many more
// runs than there are held runs (runs whose bytes went back to the arena
// or whose user was removed, kept until their engine's writer accepts
// them): their memory stays proportional to the held bytes, at an
// amortized O(log n) per run pushed.
func (s *safeScan) bound(x *Index) {
	if s.nblocked <= 1024 || s.nblocked <= 4*x.held.NumRuns() {
		return
	}
	for e := range s.blocked {
		s.blocked[e] = s.blocked[e][:0]
	}
	s.nblocked = 0
	s.open.Reset()
	s.kept = s.kept[:0]
	for _, h := range x.held.Runs() {
		s.reopen(h, x.granule)
	}
}

// unblock moves to open (to cand, for whole's pieces) the blocked runs of
// each engine that safe accepts or that completed since they were
// blocked.
func (s *safeScan) unblock(safe func(sasync.Event) bool, whole bool) {
	for e := range sasync.MaxEngines {
		h := s.blocked[e]
		for len(h) > 0 && (h[0].seq <= s.done[e] || safe(sasync.Event{Engine: sasync.EngineID(e), Seq: h[0].seq})) {
			if whole {
				s.cand = append(s.cand, h[0].piece)
			} else {
				s.open.Add(h[0].r)
			}
			h = popBlocked(h)
			s.nblocked--
		}
		s.blocked[e] = h
	}
}

// pin gathers the granules r, pinned by a user on engine e of seq seq,
// into the blocked run being built (keys come in order of their start, so
// runs of one engine that touch merge), pushing the run before when the
// engine changes or r does not touch it.
func (s *safeScan) pin(e int, seq sasync.Seq, r ranges.Range) {
	if !s.cur.r.Empty() && e == s.curEngine && r.Lo <= s.cur.r.Hi {
		s.cur.r.Hi = max(s.cur.r.Hi, r.Hi)
		s.cur.seq = min(s.cur.seq, seq)
		return
	}
	s.flush()
	s.cur, s.curEngine = blocked{r: r, seq: seq}, e
}

// flush pushes the run pin was building, if any.
func (s *safeScan) flush() {
	if s.cur.r.Empty() {
		return
	}
	s.blocked[s.curEngine] = pushBlocked(s.blocked[s.curEngine], s.cur)
	s.nblocked++
	s.cur = blocked{}
}

// pushBlocked adds b to the min-heap h (by seq).
func pushBlocked(h []blocked, b blocked) []blocked {
	h = append(h, b)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].seq <= h[i].seq {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

// popBlocked removes the least seq of the min-heap h.
func popBlocked(h []blocked) []blocked {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l].seq < h[m].seq {
			m = l
		}
		if l+1 < n && h[l+1].seq < h[m].seq {
			m = l + 1
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// TakeRanges hands the held bytes rs (disjoint, granule-aligned, every byte
// held; take them from SafeRuns) to a new owner and returns their fence: the
// join of the events of the pending users covering them, which the new
// owner's users must be ordered after. All leave the held bytes before
// anything else is decided, so in whole mode what remains of a piece
// (returned through free if these ranges held its last pins) never includes
// bytes just taken. Nothing changes on error.
func (x *Index) TakeRanges(rs []ranges.Range, free func(ranges.Range)) (sasync.Clock, error) {
	if invariants.Enabled {
		defer x.verify()
	}
	var fence sasync.Clock
	g := x.granule
	for i, r := range rs {
		if r.Empty() || r.Lo&(g-1) != 0 || r.Hi&(g-1) != 0 || !x.held.ContainsRange(r) {
			return fence, fmt.Errorf("%w: take %v", ErrInvalidRange, r)
		}
		for _, o := range rs[:i] {
			if o.Overlaps(r) {
				return fence, fmt.Errorf("%w: take %v twice", ErrInvalidRange, r)
			}
		}
	}
	for _, r := range rs {
		f, _ := x.Fence(r)
		fence.Join(&f)
		x.held.Remove(r)
		x.heldBytes -= r.Len()
	}
	x.touched.Reset()
	if x.mode.Whole() {
		// The pieces rs cuts, found by address, lose those bytes; a piece
		// left empty goes.
		x.piecesOver(rs)
		for _, r := range rs {
			x.pieceAt.remove(r)
		}
		gone := x.pieceCand[:0]
		for _, i := range x.pieceCand {
			p := &x.pieces[i]
			for _, r := range rs {
				if _, ok := p.bytes.Overlaps(r); ok {
					p.bytes.Remove(r)
				}
			}
			if p.bytes.IsEmpty() {
				gone = append(gone, i)
				continue
			}
			// The users that pinned the piece may all have covered rs.
			x.touched.AddSet(&p.bytes)
			if x.mode == WholeFenced {
				x.scan.cand = append(x.scan.cand, p.id)
			}
		}
		x.pieceCand = gone
		x.dropPieces()
	}
	x.reclaim(free)
	return fence, nil
}

// releasing tells the next SafeRuns pass to look at the granules runs
// touch (subrange fenced mode): bytes just released. (In whole fenced mode
// the new piece tells it.)
func (x *Index) releasing(runs []ranges.Range) {
	if x.mode != SubrangeFenced {
		return
	}
	for _, r := range runs {
		x.scan.reopen(r, x.granule)
	}
}

// removing tells the next SafeRuns pass that the user over runs is being
// removed before it completed: the bytes it pinned may be free of refused
// users now (subrange fenced mode), any piece may be (whole fenced mode).
func (x *Index) removing(runs []ranges.Range) {
	switch x.mode {
	case SubrangeFenced:
		for _, r := range runs {
			x.scan.reopen(r, x.granule)
		}
	case WholeFenced:
		x.scan.allPieces = true
	}
}
