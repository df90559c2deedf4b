package liveness

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Release makes bytes (absolute arena offsets) held: the program will not
// touch them again. Bytes that no pending user covers return at once
// through free, granule by granule; the rest return as their users
// complete (Complete) or are taken by a safe writer (SafeRuns, then TakeRanges). In whole mode
// the bytes are one piece and return together. It is an error (ErrNotHeld)
// to release bytes that are already held; nothing changes then.
//
// free receives granule-aligned runs that the caller must give back to the
// arena; the Index has forgotten them when free is called.
func (x *Index) Release(bytes *ranges.Set, free func(ranges.Range)) error {
	if invariants.Enabled {
		defer x.verify()
	}
	if bytes.IsEmpty() {
		return nil
	}
	if r, ok := x.held.OverlapsSet(bytes); ok {
		return fmt.Errorf("%w: %v", ErrNotHeld, r)
	}
	if rs := bytes.Runs(); len(rs) == 1 {
		x.held.Add(rs[0]) // a buffer's bytes: one run, appended in place
	} else {
		x.held.AddSet(bytes)
	}
	x.heldBytes += bytes.Len()
	x.releasing(bytes.Runs())
	if x.mode.Whole() {
		x.addPiece(bytes)
	}
	x.touched.Reset()
	for _, r := range bytes.Runs() {
		// A run a pending user covers exactly keeps every granule it
		// touches pinned (in whole mode, the piece too): reclaim need not
		// look there. The common case: a buffer released while its last
		// writer or reader of the whole is pending.
		if g, ok := x.group(r); ok && g.n > 0 && x.mode != IROrder {
			continue
		}
		x.touched.Add(r)
	}
	x.reclaim(free)
	return nil
}

// addPiece records bytes as a whole-mode piece, reusing the storage of a
// piece dropped before when there is one.
func (x *Index) addPiece(bytes *ranges.Set) {
	n := len(x.pieces)
	if n < cap(x.pieces) {
		x.pieces = x.pieces[:n+1]
		x.pieces[n].bytes.Reset()
	} else {
		x.pieces = append(x.pieces, piece{})
	}
	x.pieces[n].bytes.AddSet(bytes)
	for _, r := range bytes.Runs() {
		x.pieceAt.add(r, int32(n))
	}
	x.scan.pieceAdded(x, n)
}

// dropPiece removes piece i; the last piece takes its place and its storage
// stays past the end for addPiece to reuse.
func (x *Index) dropPiece(i int) {
	for _, r := range x.pieces[i].bytes.Runs() {
		x.pieceAt.remove(r)
	}
	last := len(x.pieces) - 1
	x.pieces[i], x.pieces[last] = x.pieces[last], x.pieces[i]
	if i != last {
		x.pieceAt.retag(&x.pieces[i].bytes, int32(i))
	}
	x.scan.pieceDropped(x, i, last)
	x.pieces = x.pieces[:last]
}

// dropPieces drops the pieces at the places in x.pieceCand (sorted, no
// duplicates), from the last: each drop moves the last piece into its
// place, never one still to be dropped.
func (x *Index) dropPieces() {
	for k := len(x.pieceCand) - 1; k >= 0; k-- {
		x.dropPiece(int(x.pieceCand[k]))
	}
}

// piecesOver sets x.pieceCand to the places of the pieces with bytes in
// s, in increasing order, each once.
func (x *Index) piecesOver(s []ranges.Range) {
	x.pieceCand = x.pieceCand[:0]
	for _, t := range s {
		for _, pr := range x.pieceAt.overlapping(t) {
			x.pieceCand = append(x.pieceCand, pr.piece)
		}
	}
	if len(x.pieceCand) > 1 {
		slices.Sort(x.pieceCand)
		x.pieceCand = slices.Compact(x.pieceCand)
	}
	x.pieceVisits += len(x.pieceCand)
}

// reclaim returns to the arena every held granule near x.touched that may
// now return: fully held, not covered by a pending user (subrange mode), not
// part of a still-pinned piece (whole mode).
//
// The granules looked at are those the touched runs touch (their windows;
// touched runs within one granule, a strided view's bytes, share one),
// and of those only the ones fully held: for each held run a window
// meets, a binary search of the held runs, not a pass over all of them.
// What may go is collected in x.freed and leaves the held bytes once the
// windows have been looked at.
func (x *Index) reclaim(free func(ranges.Range)) {
	if x.touched.IsEmpty() || x.held.IsEmpty() {
		return
	}
	if x.mode.Whole() {
		// The pieces over the touched bytes, found by address; those no
		// pending user pins any more go, and their bytes are looked at
		// too. (Pieces are disjoint: adding one's bytes to touched puts
		// no other piece under them.)
		x.piecesOver(x.touched.Runs())
		gone := x.pieceCand[:0]
		for _, i := range x.pieceCand {
			if p := &x.pieces[i]; !x.coveredAny(&p.bytes) {
				x.touched.AddSet(&p.bytes)
				gone = append(gone, i)
			}
		}
		x.pieceCand = gone
		x.dropPieces()
	}
	x.freed = x.freed[:0]
	var win ranges.Range
	for _, t := range x.touched.Runs() {
		w := ranges.Granule(x.granule).Out(t)
		if w.Lo <= win.Hi && !win.Empty() {
			win.Hi = max(win.Hi, w.Hi)
			continue
		}
		if !win.Empty() {
			x.reclaimWindow(win)
		}
		win = w
	}
	x.reclaimWindow(win)
	for _, r := range x.freed {
		x.held.Remove(r)
		x.heldBytes -= r.Len()
		free(r)
	}
}

// reclaimWindow appends to x.freed the granules of the granule-aligned
// window win that may return: fully held and not pinned. Windows never
// touch one another, nor do held runs, so the fully held granules of each
// held run clipped to win are maximal runs of their own.
func (x *Index) reclaimWindow(win ranges.Range) {
	for _, h := range x.held.RunsOverlapping(win) {
		c := ranges.Granule(x.granule).In(h.Intersect(win))
		if c.Empty() {
			continue
		}
		switch {
		case x.mode == IROrder:
			x.freed = append(x.freed, c)
		case x.mode.Whole():
			x.pinned.Reset()
			prs := x.pieceAt.overlapping(c)
			x.pieceVisits += len(prs)
			for _, pr := range prs {
				x.pinned.Add(pr.r.Intersect(c))
			}
			x.freed = append(x.freed, x.unpinnedOf(c)...)
		default:
			x.appendUncovered(c)
		}
	}
}

// appendUncovered appends to x.freed the granules of c (granule-aligned)
// that no pending user touches, in one pass over the keys overlapping c:
// they come in order of their first byte, so the granules they pin are
// passed in order too and the gaps between them are what is free. The
// pass stops once every granule of c is pinned.
func (x *Index) appendUncovered(c ranges.Range) {
	g := ranges.Granule(x.granule)
	next := c.Lo // the granules [c.Lo, next) are decided
	pinned := func(gr *group) bool {
		if gr.n == 0 {
			return true
		}
		pin := g.Out(ranges.Range{Lo: max(gr.lo, c.Lo), Hi: min(gr.hi, c.Hi)})
		if pin.Lo > next {
			x.freed = append(x.freed, ranges.Range{Lo: next, Hi: pin.Lo})
		}
		next = max(next, pin.Hi)
		return next < c.Hi
	}
	if gs, ok := x.tree.remembered(c.Lo, c.Hi); ok {
		// The keys the last query found, in key order: those overlapping c
		// are the ones a walk would report.
		for _, gr := range gs {
			if gr.hi > c.Lo && gr.lo < c.Hi && !pinned(gr) {
				break
			}
		}
	} else {
		x.tree.Overlapping(c.Lo, c.Hi, pinned)
	}
	if next < c.Hi {
		x.freed = append(x.freed, ranges.Range{Lo: next, Hi: c.Hi})
	}
}

// unpinnedOf returns the granules of c that no byte of x.pinned touches:
// what may go (reclaim) or be taken (SafeRuns) once x.pinned holds the
// bytes of c that must stay. The result is x.unpinned's, valid until the
// next call.
func (x *Index) unpinnedOf(c ranges.Range) []ranges.Range {
	alignOutInto(&x.pinnedGranules, &x.pinned, x.granule)
	x.unpinned.Reset()
	x.unpinned.Add(c)
	x.unpinned.RemoveSet(&x.pinnedGranules)
	return x.unpinned.Runs()
}

// alignOutInto sets dst to the granules src touches, without allocating
// once dst has grown.
func alignOutInto(dst, src *ranges.Set, g int64) {
	dst.Reset()
	for _, r := range src.Runs() {
		dst.Add(ranges.Granule(g).Out(r))
	}
}

// alignInInto sets dst to the granules src covers fully.
func alignInInto(dst, src *ranges.Set, g int64) {
	dst.Reset()
	for _, r := range src.Runs() {
		if in := ranges.Granule(g).In(r); !in.Empty() {
			dst.Add(in)
		}
	}
}

func (x *Index) coveredAny(s *ranges.Set) bool {
	for _, r := range s.Runs() {
		if x.Covered(r) {
			return true
		}
	}
	return false
}

// PendingBytes returns the union of the bytes pending users cover, and the
// same per engine (unknown users are counted in the union only), from
// counts kept by every add and removal: O(MaxEngines) plus the changes
// logged since the last call, O(log arena) each (see Index.uncounted).
func (x *Index) PendingBytes() (total int64, perEngine [sasync.MaxEngines]int64) {
	x.applyCounts()
	for e := range x.pendingOn {
		perEngine[e] = x.pendingOn[e].Covered()
	}
	return x.pendingAll.Covered(), perEngine
}

// pendingBytesWalk is PendingBytes computed from the tree's keys: one pass
// in address order merges runs as it goes, O(keys + users). CheckInvariants
// compares the two.
func (x *Index) pendingBytesWalk() (total int64, perEngine [sasync.MaxEngines]int64) {
	var all sweep
	var per [sasync.MaxEngines]sweep
	x.tree.Each(func(g *group) bool {
		if g.n == 0 {
			return true
		}
		r := ranges.Range{Lo: g.lo, Hi: g.hi}
		all.add(r)
		for _, id := range g.list() {
			if u := &x.users[id]; !u.unknown {
				per[u.ev.Engine].add(r)
			}
		}
		return true
	})
	for e := range per {
		perEngine[e] = per[e].len()
	}
	return all.len(), perEngine
}

// sweep measures a union of runs fed in increasing Lo order.
type sweep struct {
	cur   ranges.Range
	total int64
}

func (s *sweep) add(r ranges.Range) {
	if s.cur.Empty() || r.Lo > s.cur.Hi {
		s.total += s.cur.Len()
		s.cur = r
	} else if r.Hi > s.cur.Hi {
		s.cur.Hi = r.Hi
	}
}

func (s *sweep) len() int64 { return s.total + s.cur.Len() }

// verify panics with the first broken invariant; in builds with the
// invariants tag every mutator defers it.
func (x *Index) verify() { invariants.Hold(x.CheckInvariants()) }

// CheckInvariants verifies every invariant of the Index and returns the
// first violation found:
//   - the held bytes are a normalized set;
//   - every tree key [lo, hi] has a group for exactly [lo, hi+1), also
//     found by the run map, whose users are live and list that run, each
//     once; the key and empty-key counts are right;
//   - every live user's runs are normalized and each is a key listing it;
//     the live count equals Pending();
//   - every known live user is queued once on its engine, queues sorted;
//   - whole mode: pieces are disjoint, held, and each is still pinned;
//     the piece index lists every run of every piece;
//   - nothing is held that may return: in the safe modes no fully held
//     granule is free of pending users (subrange) or of pinned pieces
//     (whole); in the unsafe mode no granule is fully held.
func (x *Index) CheckInvariants() error {
	if x.broken != nil {
		return x.broken
	}
	if err := x.held.CheckInvariants(); err != nil {
		return fmt.Errorf("liveness: held: %w", err)
	}
	if n := x.held.Len(); n != x.heldBytes {
		return fmt.Errorf("liveness: %d bytes held, counted %d", n, x.heldBytes)
	}
	// Before PendingBytes, which counts every live user.
	if err := x.checkUncounted(); err != nil {
		return err
	}
	wt, wp := x.pendingBytesWalk()
	if t, p := x.PendingBytes(); t != wt || p != wp {
		return fmt.Errorf("liveness: pending bytes counted %d %v, walked %d %v", t, p, wt, wp)
	}
	if err := x.checkKeys(); err != nil {
		return err
	}
	if err := x.checkUsers(); err != nil {
		return err
	}
	inPieces, err := x.checkPieces()
	if err != nil {
		return err
	}
	return x.checkNothingReturnable(&inPieces)
}

// checkUncounted checks that every live user not yet in the pending
// counts is listed, with its generation, among the uncounted ones.
func (x *Index) checkUncounted() error {
	listed := make(map[UserID]bool, len(x.uncounted))
	for _, q := range x.uncounted {
		if q.id < 0 || int(q.id) >= len(x.users) {
			return fmt.Errorf("liveness: uncounted user %d out of range", q.id)
		}
		if u := &x.users[q.id]; u.live && u.gen == q.gen {
			listed[q.id] = true
		}
	}
	for id := range x.users {
		if u := &x.users[id]; u.live && !u.counted && !listed[UserID(id)] {
			return fmt.Errorf("liveness: user %d is neither counted nor listed to be", id)
		}
	}
	return nil
}

// checkKeys checks the tree's keys against the run map and their groups
// against the users.
func (x *Index) checkKeys() error {
	if err := x.tree.check(); err != nil {
		return err
	}
	keys, empty := 0, 0
	var err error
	x.tree.Each(func(g *group) bool {
		keys++
		if g.n == 0 {
			empty++
		}
		err = x.checkGroup(g)
		return err == nil
	})
	if err != nil {
		return err
	}
	if keys != x.keys || x.tree.Len() != keys || len(x.byRun) != keys || empty != x.empty {
		return fmt.Errorf("liveness: %d keys (%d empty) in tree, %d in the run map, counted %d (%d empty)", keys, empty, len(x.byRun), x.keys, x.empty)
	}
	for slot, g := range x.recent {
		if g != nil && x.byRun[ranges.Range{Lo: g.lo, Hi: g.hi}] != g {
			return fmt.Errorf("liveness: run cache slot %d holds [%d, %d), no key's group", slot, g.lo, g.hi)
		}
	}
	return nil
}

// checkGroup checks one key's group: in the run map, listing live users
// once each, every one of which covers the key's run.
func (x *Index) checkGroup(g *group) error {
	if x.byRun[ranges.Range{Lo: g.lo, Hi: g.hi}] != g {
		return fmt.Errorf("liveness: run map misses group [%d, %d)", g.lo, g.hi)
	}
	for i, id := range g.list() {
		if id < 0 || int(id) >= len(x.users) || !x.users[id].live {
			return fmt.Errorf("liveness: group [%d, %d) lists dead user %d", g.lo, g.hi, id)
		}
		if containsID(g.list()[:i], id) {
			return fmt.Errorf("liveness: group [%d, %d) lists user %d twice", g.lo, g.hi, id)
		}
		if !hasRun(x.users[id].runs(), ranges.Range{Lo: g.lo, Hi: g.hi}) {
			return fmt.Errorf("liveness: user %d in group [%d, %d) lacks that run", id, g.lo, g.hi)
		}
	}
	var want group
	for _, id := range g.list() {
		want.note(&x.users[id])
	}
	if want.last != g.last || want.engines != g.engines || want.unknown != g.unknown {
		return fmt.Errorf("liveness: group [%d, %d) summary: latest %v engines %b unknown %d, users say %v %b %d",
			g.lo, g.hi, g.last, g.engines, g.unknown, want.last, want.engines, want.unknown)
	}
	return nil
}

// checkUsers checks the engine queues and the live users: queues in seq
// order, each live known user queued once on its engine, every user's runs
// normalized and indexed, the pending count right.
func (x *Index) checkUsers() error {
	var queuedCount [sasync.MaxEngines]int
	for e := range x.queues {
		q := x.queues[e][x.heads[e]:]
		if (len(q) > 0) != (x.queued&(1<<e) != 0) {
			return fmt.Errorf("liveness: engine %d: %d queued, queued mask %b", e, len(q), x.queued)
		}
		for i := range q {
			if i > 0 && q[i].seq < q[i-1].seq {
				return fmt.Errorf("liveness: engine %d queue out of order at %d", e, i)
			}
			u := &x.users[q[i].id]
			if u.live && u.gen == q[i].gen {
				if u.unknown || int(u.ev.Engine) != e || u.ev.Seq != q[i].seq {
					return fmt.Errorf("liveness: queue entry %v does not match user %d", q[i], q[i].id)
				}
				queuedCount[e]++
			}
		}
	}
	live := 0
	var known [sasync.MaxEngines]int
	for i := range x.users {
		u := &x.users[i]
		if !u.live {
			continue
		}
		live++
		if !u.unknown {
			known[u.ev.Engine]++
		}
		runs := u.runs()
		if len(u.more) == 1 {
			return fmt.Errorf("liveness: user %d keeps one run apart", i)
		}
		for j, r := range runs {
			if r.Empty() || (j > 0 && r.Lo <= runs[j-1].Hi) {
				return fmt.Errorf("liveness: user %d runs not normalized", i)
			}
			g, ok := x.byRun[r]
			if !ok || !containsID(g.list(), UserID(i)) {
				return fmt.Errorf("liveness: user %d run %v not indexed", i, r)
			}

		}
	}
	if live != x.pending {
		return fmt.Errorf("liveness: %d live users, pending count %d", live, x.pending)
	}
	if known != queuedCount {
		return fmt.Errorf("liveness: queued users %v, known live users %v", queuedCount, known)
	}
	return nil
}

// checkPieces checks whole mode's pieces — only in whole mode, disjoint,
// held, each still pinned — and returns their bytes.
func (x *Index) checkPieces() (ranges.Set, error) {
	var inPieces ranges.Set
	for i, p := range x.pieces {
		if !x.mode.Whole() {
			return inPieces, fmt.Errorf("liveness: piece outside whole mode")
		}
		if r, ok := inPieces.OverlapsSet(&p.bytes); ok {
			return inPieces, fmt.Errorf("liveness: pieces overlap at %v", r)
		}
		inPieces.AddSet(&p.bytes)
		if !x.coveredAny(&p.bytes) {
			return inPieces, fmt.Errorf("liveness: piece %d is held but no user pins it", i)
		}
	}
	if d := ranges.Subtract(&inPieces, &x.held); !d.IsEmpty() {
		return inPieces, fmt.Errorf("liveness: piece bytes %v not held", d.Runs()[0])
	}
	return inPieces, x.checkPieceIndex()
}

// checkPieceIndex checks that the piece index lists exactly every run of
// every piece, with its place, in address order.
func (x *Index) checkPieceIndex() error {
	want := make(map[pieceRun]bool)
	for i := range x.pieces {
		for _, r := range x.pieces[i].bytes.Runs() {
			want[pieceRun{r: r, piece: int32(i)}] = true
		}
	}
	var err error
	var prev ranges.Range
	n := 0
	x.pieceAt.each(func(pr pieceRun) {
		switch {
		case err != nil:
		case pr.r.Empty() || (n > 0 && pr.r.Lo < prev.Hi):
			err = fmt.Errorf("liveness: piece index out of order at %v", pr.r)
		case !want[pr]:
			err = fmt.Errorf("liveness: piece index lists %v of piece %d, no piece's run", pr.r, pr.piece)
		}
		prev = pr.r
		n++
	})
	if err == nil && (n != len(want) || n != x.pieceAt.len()) {
		err = fmt.Errorf("liveness: %d piece runs, %d indexed, counted %d", len(want), n, x.pieceAt.len())
	}
	return err
}

// checkNothingReturnable checks that no held granule may return: in the
// safe modes every fully held granule has a pending user (subrange) or
// lies in a pinned piece (whole); in the unsafe mode none is fully held.
func (x *Index) checkNothingReturnable(inPieces *ranges.Set) error {
	full := x.held.AlignIn(x.granule)
	for _, c := range full.Runs() {
		for g := c.Lo; g < c.Hi; g += x.granule {
			gr := ranges.Range{Lo: g, Hi: g + x.granule}
			switch {
			case x.mode == IROrder:
				return fmt.Errorf("liveness: granule %v held in unsafe mode", gr)
			case x.mode.Whole():
				if _, ok := inPieces.Overlaps(gr); !ok {
					return fmt.Errorf("liveness: granule %v held outside any pinned piece", gr)
				}
			default:
				if !x.Covered(gr) {
					return fmt.Errorf("liveness: granule %v held with no pending user", gr)
				}
			}
		}
	}
	return nil
}

// hasRun reports whether runs holds r. A user's runs come from a
// ranges.Set, sorted by start: a binary search finds r, and only a miss
// (a broken invariant, or runs given out of order) scans them all.
func hasRun(runs []ranges.Range, r ranges.Range) bool {
	if i, ok := slices.BinarySearchFunc(runs, r.Lo, func(q ranges.Range, lo int64) int { return cmp.Compare(q.Lo, lo) }); ok && runs[i] == r {
		return true
	}
	for _, q := range runs {
		if q == r {
			return true
		}
	}
	return false
}

func containsID(ids []UserID, id UserID) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}
