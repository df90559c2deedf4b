package plan

import (
	"fmt"
	"slices"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
)

// In-place placement. For an op marked inplace that first writes a whole
// buffer B and reads a view R of another buffer A with B's shape and
// element size, B may take R's bytes when R's bytes die at that op: every
// other op using them (through any view of A, or of anything already placed
// over A) happens-before it, and the op's other uses of those bytes put
// element i over element i as R does. B then becomes a member of A's root:
// its offset is fixed relative to the root's, and planning places the
// root with all its members as one item.
//
// Two kinds of member:
//
//   - dense: R's footprint is B's dense layout shifted by d. B stays a
//     buffer of its own at root offset + d; the checker sees the op put
//     element i over element i. The host must let A's bytes go before B's,
//     as the checker orders the pair by release.
//   - relaid: R is strided. B cannot sit on R's footprint with one offset,
//     so the plan gives it a placement over the root (trace.Placement):
//     the checker treats it as a view of the root with R's layout, its
//     views re-expressed in that layout, the group released when the last
//     of it is; within the group, uses through the buffers placed earlier
//     must happen-before uses through B, and no buffer of the group may
//     hold B's bytes to the end. A root takes members of one kind only, so
//     moving its release never reorders it against a dense member.

// placement says where a buffer's natural layout sits within its root.
type placement struct {
	root   int            // buffer index of the root (itself when not a member)
	layout strided.Layout // a member's natural layout in root coordinates (zero for a root)
	relaid bool           // layout is not the natural layout shifted
	shift  int64          // for unrelaid buffers: root offset to add
	op     int            // the op that placed it in place, -1 for roots
}

// inplacer decides in-place placements for one program.
//
// It has more than 20 fields because 13 of them, viewsOf through
// memberSlab, are the memory of an inplaceScratch, lent by newInplacerIn
// and handed back by keep field by field; the rest are the program and
// how it is read (hb, order, usesOf), the scratch, a flag, the slab
// cursor and a test hook.
type inplacer struct {
	p        *trace.Program
	hb       func(a, b int) bool
	order    *trace.Order // happens-before as clocks, with several engines (nil: built when needed)
	scratch  *Scratch     // where derivations take their memory (nil: a pool)
	relayout bool
	usesOf   [][]trace.OpUse // per buffer, in op order (Program.UsesByBuffer)
	viewsOf  [][]int         // per buffer, its views (slices of one array)
	place    []placement
	members  [][]int // per root with members: the root and its members, in placement order
	self     []int   // self[b] == b: group(b) of a buffer with no members
	dense    []bool  // root has dense members
	relaid   []bool  // root has relaid members
	// Root footprints, cached per buffer (whole) and per view; a commit
	// clears the entries of the buffer placed.
	fpWhole []rootFP
	fpView  []rootFP
	// taken and takenRoot are decide's memory for the root footprints an
	// op has taken, kept from op to op.
	taken     []ranges.Set
	takenRoot []int
	// count and views are newInplacerIn's arrays, kept for keep.
	count, views []int
	// memberSlab holds the first four members of each group, from slabAt
	// on free.
	memberSlab []int
	slabAt     int
	// afterCommit, a test hook, runs after every in-place placement.
	afterCommit func()
}

// rootFP is a cached root footprint: set is exact unless the layout was too
// irregular to list within trace.CoverBudget runs. For a ref of a relaid
// buffer it keeps the ref's root layout too (nil: the ref is not
// expressible in the root's coordinates).
type rootFP struct {
	set    ranges.Set
	layout *strided.Layout
	exact  bool
	ok     bool
}

func newInplacer(p *trace.Program, hb func(a, b int) bool, allowRelayout bool) *inplacer {
	return newInplacerIn(p, hb, allowRelayout, &inplaceScratch{})
}

// inplaceScratch is an inplacer's per-buffer and per-view memory, kept by
// a Scratch from plan to plan.
type inplaceScratch struct {
	place         []placement
	members       [][]int
	self, views   []int
	count         []int
	dense, relaid []bool
	fpWhole       []rootFP
	fpView        []rootFP
	viewsOf       [][]int
	taken         []ranges.Set
	takenRoot     []int
	memberSlab    []int
}

// zeroedLen returns s with length n, every element zero, reusing its
// memory when it has room.
func zeroedLen[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// newInplacerIn is newInplacer with its memory taken from sc (see
// inplacer.keep).
func newInplacerIn(p *trace.Program, hb func(a, b int) bool, allowRelayout bool, sc *inplaceScratch) *inplacer {
	n := len(p.Buffers)
	ip := &inplacer{p: p, hb: hb, relayout: allowRelayout, usesOf: p.UsesByBuffer(), viewsOf: zeroedLen(sc.viewsOf, n),
		place: zeroedLen(sc.place, n), members: zeroedLen(sc.members, n), self: zeroedLen(sc.self, n),
		dense: zeroedLen(sc.dense, n), relaid: zeroedLen(sc.relaid, n), fpWhole: zeroedLen(sc.fpWhole, n),
		fpView: zeroedLen(sc.fpView, len(p.Views)), taken: sc.taken[:0], takenRoot: sc.takenRoot[:0],
		memberSlab: sc.memberSlab}
	if len(ip.memberSlab) < 4*n {
		ip.memberSlab = make([]int, 4*n)
	}
	// Count, then carve every buffer's list of views out of one array.
	count := zeroedLen(sc.count, n+1)
	ip.count = count
	for v := range p.Views {
		count[p.Views[v].Buffer]++
	}
	views := zeroedLen(sc.views, len(p.Views))
	ip.views = views
	at := 0
	for b := range n {
		ip.viewsOf[b] = views[at : at : at+count[b]]
		at += count[b]
	}
	for v := range p.Views {
		b := p.Views[v].Buffer
		ip.viewsOf[b] = append(ip.viewsOf[b], v)
	}
	for b := range p.Buffers {
		ip.place[b] = placement{root: b, op: -1} // a root's layout is its natural one, at 0
		ip.self[b] = b
	}
	return ip
}

// keep hands ip's memory to sc, for the next newInplacerIn; ip must not be
// used after.
func (ip *inplacer) keep(sc *inplaceScratch) {
	clear(ip.taken)
	*sc = inplaceScratch{place: ip.place, members: ip.members, self: ip.self, views: ip.views, count: ip.count,
		dense: ip.dense, relaid: ip.relaid, fpWhole: ip.fpWhole, fpView: ip.fpView, viewsOf: ip.viewsOf,
		taken: ip.taken[:0], takenRoot: ip.takenRoot[:0], memberSlab: ip.memberSlab}
	*ip = inplacer{}
}

// group returns root r's group: r and the buffers placed over it, in
// placement order. The slice must not be modified.
func (ip *inplacer) group(r int) []int {
	if m := ip.members[r]; m != nil {
		return m
	}
	return ip.self[r : r+1 : r+1]
}

// rootLayout returns the layout of r in its root's coordinates.
func (ip *inplacer) rootLayout(r trace.Ref) (strided.Layout, bool) {
	pl := ip.place[r.Buffer]
	if !pl.relaid {
		return shifted(ip.p.Layout(r), pl.shift), true
	}
	if e := ip.rootFP(r); e.layout != nil {
		return *e.layout, true
	}
	return strided.Layout{}, false
}

// rootFootprint returns the bytes r covers in its root's coordinates (a
// superset when the view is too irregular to list exactly). The set is
// cached and shared: callers must not modify it.
func (ip *inplacer) rootFootprint(r trace.Ref) *ranges.Set {
	return &ip.rootFP(r).set
}

func (ip *inplacer) rootFP(r trace.Ref) *rootFP {
	e := &ip.fpWhole[r.Buffer]
	if r.View >= 0 {
		e = &ip.fpView[r.View]
	}
	if e.ok {
		return e
	}
	*e = ip.computeFP(r)
	return e
}

// computeFP computes r's root footprint afresh.
func (ip *inplacer) computeFP(r trace.Ref) rootFP {
	pl := ip.place[r.Buffer]
	if !pl.relaid {
		fp, exact := ip.p.Footprint(r)
		if pl.shift != 0 {
			fp = fp.Clone()
			_ = fp.Translate(pl.shift)
		}
		return rootFP{set: fp, exact: exact, ok: true}
	}
	e := rootFP{ok: true}
	if l, ok := relayout(ip.p.Layout(r), ip.p.Buffers[r.Buffer].Layout, pl.layout); ok {
		e.layout = &l
		e.set, e.exact, _ = l.Cover(trace.CoverBudget)
	}
	return e
}

// decide walks the ops in order and places every buffer it can in place.
func (ip *inplacer) decide() {
	p := ip.p
	for k := range p.Ops {
		op := &p.Ops[k]
		if !op.InPlace {
			continue
		}
		taken, takenRoot := ip.taken[:0], ip.takenRoot[:0] // root footprints already taken at this op
		for wi, w := range op.Uses {
			b := w.Ref.Buffer
			B := &p.Buffers[b]
			if w.Access&trace.AccessWrite == 0 || w.Ref.View >= 0 || B.External ||
				len(ip.group(b)) > 1 || ip.place[b].root != b || ip.usesOf[b][0].Op != k || !ip.writesOnly(k, b) {
				continue
			}
			for ri, rd := range op.Uses {
				if ri == wi || rd.Access&trace.AccessRead == 0 {
					continue
				}
				pl, fp, ok := ip.candidate(k, b, rd.Ref, taken, takenRoot)
				if !ok {
					continue
				}
				ip.commit(b, pl, fp)
				taken = append(taken, fp)
				takenRoot = append(takenRoot, pl.root)
				break
			}
		}
		ip.taken, ip.takenRoot = taken, takenRoot
	}
}

// candidate checks whether buffer b, first written whole by op k, may take
// the bytes of read ref rd, and returns its placement and root footprint.
func (ip *inplacer) candidate(k, b int, rd trace.Ref, taken []ranges.Set, takenRoot []int) (placement, ranges.Set, bool) {
	p := ip.p
	a := rd.Buffer
	A, B := &p.Buffers[a], &p.Buffers[b]
	if a == b || A.External {
		return placement{}, ranges.Set{}, false
	}
	r := ip.place[a].root
	l, ok := ip.rootLayout(rd)
	if !ok || !sameShape(l, B.Layout) {
		return placement{}, ranges.Set{}, false
	}
	e := ip.rootFP(rd) // l's cover
	fp := e.set
	if !e.exact || fp.IsEmpty() {
		return placement{}, ranges.Set{}, false
	}
	for i, t := range taken {
		if takenRoot[i] == r {
			if overlap(&t, &fp) {
				return placement{}, ranges.Set{}, false
			}
		}
	}
	dense := sameElements(l, shifted(B.Layout, l.Offset))
	pl := placement{root: r, layout: l, relaid: !dense || ip.relaid[r], op: k}
	if pl.relaid {
		if !ip.relayout || ip.dense[r] || p.Buffers[r].Step > B.Step || !ip.viewsExpressible(b, l) ||
			ip.discardedLater(r, fp, p.Ops[k].Step) || ip.heldOver(r, fp) {
			return placement{}, ranges.Set{}, false
		}
	} else {
		pl.shift = l.Offset
		if !ip.releasedBefore(rd, b) {
			return placement{}, ranges.Set{}, false
		}
	}
	if !ip.dying(k, r, fp, l) {
		return placement{}, ranges.Set{}, false
	}
	// Every later use of b must come after op k, so that each use of the
	// bytes through their old owner (all happening before k) happens
	// before each use through b.
	for _, u := range ip.usesOf[b] {
		if u.Op != k && !ip.hb(k, u.Op) {
			return placement{}, ranges.Set{}, false
		}
	}
	return pl, fp, true
}

// writesOnly reports whether op k uses buffer b by one name only, and
// only writes it: an op that reads b's bytes (they hold a value before k
// writes them) or uses b through a view too is no op whose output b may be
// placed over a dying input.
func (ip *inplacer) writesOnly(k, b int) bool {
	n := 0
	for _, u := range ip.p.Ops[k].Uses {
		if u.Ref.Buffer != b {
			continue
		}
		if n++; n > 1 || u.Access&trace.AccessRead != 0 {
			return false
		}
	}
	return true
}

// dying reports whether the root bytes fp die at op k: every other op
// using them happens-before k, and k's own uses of them put element i where
// the read view does.
func (ip *inplacer) dying(k, r int, fp ranges.Set, read strided.Layout) bool {
	for _, m := range ip.group(r) {
		for _, u := range ip.usesOf[m] {
			ref := ip.p.Ops[u.Op].Uses[u.Use].Ref
			set := ip.rootFootprint(ref)
			if !overlap(set, &fp) {
				continue
			}
			if u.Op == k {
				l, ok := ip.rootLayout(ref)
				if !ok || !sameElements(l, read) {
					return false
				}
				continue
			}
			if !ip.hb(u.Op, k) {
				return false
			}
		}
	}
	return true
}

// releasedBefore reports whether the host lets every byte of rd (a view of
// buffer a) go before it lets any byte of buffer b go, as the checker
// requires of a dense member: it orders each shared byte's two owners by
// the discard or release that lets the byte go. Bytes held to the end
// never qualify.
func (ip *inplacer) releasedBefore(rd trace.Ref, b int) bool {
	p := ip.p
	A := &p.Buffers[rd.Buffer]
	B := &p.Buffers[b]
	if len(A.Discards) == 0 { // all of A's bytes go at its release
		if A.Release < 0 {
			return false
		}
		for _, v := range B.Discards {
			if p.Views[v].Discard <= A.Release {
				return false
			}
		}
		return B.Release < 0 || A.Release < B.Release
	}
	fp, _ := p.Footprint(rd)
	rest := fp.Clone()
	latest := -1
	for _, v := range A.Discards {
		dfp, _ := p.Footprint(trace.Ref{Buffer: rd.Buffer, View: v})
		if overlap(&rest, &dfp) {
			latest = max(latest, p.Views[v].Discard)
			rest.RemoveSet(&dfp)
		}
	}
	if !rest.IsEmpty() {
		if A.Release < 0 {
			return false
		}
		latest = max(latest, A.Release)
	}
	for _, v := range B.Discards {
		if p.Views[v].Discard <= latest {
			return false
		}
	}
	return B.Release < 0 || latest < B.Release
}

// discardedLater reports whether the host discards, after step, a view of
// root r's group overlapping fp: once b is a view of r, that discard would
// take b's bytes.
func (ip *inplacer) discardedLater(r int, fp ranges.Set, step int) bool {
	for _, m := range ip.group(r) {
		for _, v := range ip.p.Buffers[m].Discards {
			if ip.p.Views[v].Discard < step {
				continue
			}
			set := ip.rootFootprint(trace.Ref{Buffer: m, View: v})
			if overlap(set, &fp) {
				return true
			}
		}
	}
	return false
}

// heldOver reports whether a buffer of root r's group that uses bytes of
// fp is held to the end: placed over them, b would destroy what the host
// still holds. (A discard may let some of them go; that is not looked at.)
func (ip *inplacer) heldOver(r int, fp ranges.Set) bool {
	for _, m := range ip.group(r) {
		if ip.p.Buffers[m].Release >= 0 {
			continue
		}
		for _, u := range ip.usesOf[m] {
			set := ip.rootFootprint(ip.p.Ops[u.Op].Uses[u.Use].Ref)
			if overlap(set, &fp) {
				return true
			}
		}
	}
	return false
}

// viewsExpressible reports whether every view of b can be re-expressed in
// layout l (b relaid onto l).
func (ip *inplacer) viewsExpressible(b int, l strided.Layout) bool {
	p := ip.p
	nat := p.Buffers[b].Layout
	for _, v := range ip.viewsOf[b] {
		if _, ok := relayout(p.Views[v].Layout, nat, l); !ok {
			return false
		}
	}
	return true
}

// commit records b as a member of pl.root, over the root bytes fp.
func (ip *inplacer) commit(b int, pl placement, fp ranges.Set) {
	ip.place[b] = pl
	if ip.members[pl.root] == nil {
		// A group's list starts in the slab, room for four; a larger
		// group's list moves out of it as it grows.
		var list []int
		if at := ip.slabAt; at+4 <= len(ip.memberSlab) {
			list, ip.slabAt = ip.memberSlab[at:at:at+4], at+4
		} else {
			list = make([]int, 0, 4)
		}
		ip.members[pl.root] = append(list, pl.root)
	}
	ip.members[pl.root] = append(ip.members[pl.root], b)
	if pl.relaid {
		ip.relaid[pl.root] = true
	} else {
		ip.dense[pl.root] = true
	}
	// Its footprints moved with it: the whole buffer is where it was put.
	ip.fpWhole[b] = rootFP{set: fp, exact: true, ok: true}
	if pl.relaid {
		l := pl.layout
		ip.fpWhole[b].layout = &l
	}
	for _, v := range ip.viewsOf[b] {
		ip.fpView[v].ok = false
	}
	if ip.afterCommit != nil {
		ip.afterCommit()
	}
}

// CheckInvariants verifies the in-place state: every buffer's root is a
// root of itself and lists it as a member; a root's kind flags match its
// members; no root mixes dense and relaid members; every member's bytes
// lie inside its root; every cached footprint is what it recomputes to.
func (ip *inplacer) CheckInvariants() error {
	p := ip.p
	for b := range p.Buffers {
		pl := ip.place[b]
		if ip.place[pl.root].root != pl.root || !slices.Contains(ip.group(pl.root), b) {
			return fmt.Errorf("buffer %q: root %d is not its root's member list: %w", p.Buffers[b].Name, pl.root, ErrInvalidTrace)
		}
		if pl.root == b {
			var dense, relaid bool
			for _, m := range ip.group(b)[1:] {
				dense = dense || !ip.place[m].relaid
				relaid = relaid || ip.place[m].relaid
			}
			if dense != ip.dense[b] || relaid != ip.relaid[b] || (dense && relaid) {
				return fmt.Errorf("root %q: flags dense=%v relaid=%v for members %v: %w",
					p.Buffers[b].Name, ip.dense[b], ip.relaid[b], ip.members[b], ErrInvalidTrace)
			}
			continue
		}
		ext, err := pl.layout.Extent()
		if err != nil || ext.Lo < 0 || ext.Hi > p.Buffers[pl.root].Size {
			return fmt.Errorf("member %q: layout %v outside root %q: %w", p.Buffers[b].Name, pl.layout, p.Buffers[pl.root].Name, ErrInvalidTrace)
		}
	}
	for b := range p.Buffers {
		refs := []trace.Ref{{Buffer: b, View: -1}}
		for _, v := range ip.viewsOf[b] {
			refs = append(refs, trace.Ref{Buffer: b, View: v})
		}
		for _, r := range refs {
			e := &ip.fpWhole[b]
			if r.View >= 0 {
				e = &ip.fpView[r.View]
				if p.Views[r.View].Buffer != b {
					return fmt.Errorf("view %d listed under buffer %q: %w", r.View, p.Buffers[b].Name, ErrInvalidTrace)
				}
			}
			if !e.ok {
				continue
			}
			fresh := ip.computeFP(r)
			if !slices.Equal(fresh.set.Runs(), e.set.Runs()) || fresh.exact != e.exact ||
				(fresh.layout == nil) != (e.layout == nil) || (e.layout != nil && !sameElements(*fresh.layout, *e.layout)) {
				return fmt.Errorf("buffer %q view %d: cached footprint stale: %w", p.Buffers[b].Name, r.View, ErrInvalidTrace)
			}
		}
	}
	return nil
}

// overlap reports whether sets a and b share a byte. Two strided
// footprints of one tensor (the Q and K rows of a fused projection) are
// runs of about the same number, interleaved: a merge of the two finds
// that in O(n), where OverlapsSet searches the larger once per run of the
// smaller, O(n log n); for sets of very different sizes OverlapsSet is the
// faster.
func overlap(a, b *ranges.Set) bool {
	ra, rb := a.Runs(), b.Runs()
	if len(ra) == 0 || len(rb) == 0 {
		return false
	}
	if n, m := min(len(ra), len(rb)), max(len(ra), len(rb)); 16*n < m {
		_, hit := a.OverlapsSet(b)
		return hit
	}
	for i, j := 0, 0; i < len(ra) && j < len(rb); {
		switch {
		case ra[i].Hi <= rb[j].Lo:
			i++
		case rb[j].Hi <= ra[i].Lo:
			j++
		default:
			return true
		}
	}
	return false
}
