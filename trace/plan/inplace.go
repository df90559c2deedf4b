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
	layout strided.Layout // the buffer's natural layout in root coordinates
	relaid bool           // layout is not the natural layout shifted
	shift  int64          // for unrelaid buffers: root offset to add
	op     int            // the op that placed it in place, -1 for roots
}

// inplacer decides in-place placements for one program.
type inplacer struct {
	p        *trace.Program
	hb       func(a, b int) bool
	relayout bool
	usesOf   [][]opUse
	place    []placement
	members  [][]int               // per root: the root and its members, in placement order
	dense    []bool                // root has dense members
	relaid   []bool                // root has relaid members
	cache    []map[int]*ranges.Set // per buffer, per view (-1: whole): root footprints
	// afterCommit, a test hook, runs after every in-place placement.
	afterCommit func()
}

type opUse struct{ op, use int }

func newInplacer(p *trace.Program, hb func(a, b int) bool, allowRelayout bool) *inplacer {
	n := len(p.Buffers)
	ip := &inplacer{p: p, hb: hb, relayout: allowRelayout, usesOf: make([][]opUse, n),
		place: make([]placement, n), members: make([][]int, n), dense: make([]bool, n),
		relaid: make([]bool, n), cache: make([]map[int]*ranges.Set, n)}
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			b := use.Ref.Buffer
			ip.usesOf[b] = append(ip.usesOf[b], opUse{k, u})
		}
	}
	for b := range p.Buffers {
		ip.place[b] = placement{root: b, layout: p.Buffers[b].Layout, op: -1}
		ip.members[b] = []int{b}
	}
	return ip
}

// rootLayout returns the layout of r in its root's coordinates.
func (ip *inplacer) rootLayout(r trace.Ref) (strided.Layout, bool) {
	pl := ip.place[r.Buffer]
	l := ip.p.Layout(r)
	if !pl.relaid {
		return shifted(l, pl.shift), true
	}
	return relayout(l, ip.p.Buffers[r.Buffer].Layout, pl.layout)
}

// rootFootprint returns the bytes r covers in its root's coordinates (a
// superset when the view is too irregular to list exactly). The set is
// cached and shared: callers must not modify it.
func (ip *inplacer) rootFootprint(r trace.Ref) *ranges.Set {
	if s, ok := ip.cache[r.Buffer][r.View]; ok {
		return s
	}
	pl := ip.place[r.Buffer]
	set := new(ranges.Set)
	switch {
	case !pl.relaid:
		fp, _ := ip.p.Footprint(r)
		*set = fp
		if pl.shift != 0 {
			*set = fp.Clone()
			_ = set.Translate(pl.shift)
		}
	default:
		if l, ok := ip.rootLayout(r); ok {
			*set, _, _ = l.Cover(trace.CoverBudget)
		}
	}
	if ip.cache[r.Buffer] == nil {
		ip.cache[r.Buffer] = map[int]*ranges.Set{}
	}
	ip.cache[r.Buffer][r.View] = set
	return set
}

// decide walks the ops in order and places every buffer it can in place.
func (ip *inplacer) decide() {
	p := ip.p
	for k := range p.Ops {
		op := &p.Ops[k]
		if !op.Inplace {
			continue
		}
		var taken []ranges.Set // root footprints already taken at this op
		var takenRoot []int
		for wi, w := range op.Uses {
			b := w.Ref.Buffer
			B := &p.Buffers[b]
			if w.Access&trace.AccessWrite == 0 || w.Ref.View >= 0 || B.External ||
				len(ip.members[b]) > 1 || ip.place[b].root != b || ip.usesOf[b][0].op != k {
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
				ip.commit(b, pl)
				taken = append(taken, fp)
				takenRoot = append(takenRoot, pl.root)
				break
			}
		}
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
	fp, exact, err := l.Cover(trace.CoverBudget)
	if err != nil || !exact || fp.IsEmpty() {
		return placement{}, ranges.Set{}, false
	}
	for i, t := range taken {
		if takenRoot[i] == r {
			if _, hit := t.OverlapsSet(&fp); hit {
				return placement{}, ranges.Set{}, false
			}
		}
	}
	dense := mapOf(l).equal(mapOf(shifted(B.Layout, l.Offset)))
	pl := placement{root: r, layout: l, relaid: !dense || ip.relaid[r], op: k}
	if pl.relaid {
		if !ip.relayout || ip.dense[r] || p.Buffers[r].Step > B.Step || !ip.viewsExpressible(b, l) ||
			ip.discardedLater(r, fp, p.Ops[k].Step) || ip.heldOver(r, fp) || ip.usesTwice(k, b) {
			return placement{}, ranges.Set{}, false
		}
	} else {
		pl.shift = l.Offset
		if !ip.releasedBefore(rd, b) {
			return placement{}, ranges.Set{}, false
		}
	}
	if !ip.dying(k, r, fp, mapOf(l)) {
		return placement{}, ranges.Set{}, false
	}
	// Every later use of b must come after op k, so that each use of the
	// bytes through their old owner (all happening before k) happens
	// before each use through b.
	for _, u := range ip.usesOf[b] {
		if u.op != k && !ip.hb(k, u.op) {
			return placement{}, ranges.Set{}, false
		}
	}
	return pl, fp, true
}

// dying reports whether the root bytes fp die at op k: every other op
// using them happens-before k, and k's own uses of them put element i where
// the read view does.
func (ip *inplacer) dying(k, r int, fp ranges.Set, em elementMap) bool {
	for _, m := range ip.members[r] {
		for _, u := range ip.usesOf[m] {
			ref := ip.p.Ops[u.op].Uses[u.use].Ref
			set := ip.rootFootprint(ref)
			if _, hit := set.OverlapsSet(&fp); !hit {
				continue
			}
			if u.op == k {
				l, ok := ip.rootLayout(ref)
				if !ok || !mapOf(l).equal(em) {
					return false
				}
				continue
			}
			if !ip.hb(u.op, k) {
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
	fp, _ := p.Footprint(rd)
	rest := fp.Clone()
	latest := -1
	for _, v := range A.Discards {
		dfp, _ := p.Footprint(trace.Ref{Buffer: rd.Buffer, View: v})
		if _, hit := rest.OverlapsSet(&dfp); hit {
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
	B := &p.Buffers[b]
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
	for _, m := range ip.members[r] {
		for _, v := range ip.p.Buffers[m].Discards {
			if ip.p.Views[v].Discard < step {
				continue
			}
			set := ip.rootFootprint(trace.Ref{Buffer: m, View: v})
			if _, hit := set.OverlapsSet(&fp); hit {
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
	for _, m := range ip.members[r] {
		if ip.p.Buffers[m].Release >= 0 {
			continue
		}
		for _, u := range ip.usesOf[m] {
			set := ip.rootFootprint(ip.p.Ops[u.op].Uses[u.use].Ref)
			if _, hit := set.OverlapsSet(&fp); hit {
				return true
			}
		}
	}
	return false
}

// usesTwice reports whether op k uses buffer b by more than one name (its
// whole-buffer write and a view of b), which the in-place rule does not
// look at.
func (ip *inplacer) usesTwice(k, b int) bool {
	n := 0
	for _, u := range ip.p.Ops[k].Uses {
		if u.Ref.Buffer == b {
			n++
		}
	}
	return n > 1
}

// viewsExpressible reports whether every view of b can be re-expressed in
// layout l (b relaid onto l).
func (ip *inplacer) viewsExpressible(b int, l strided.Layout) bool {
	p := ip.p
	nat := p.Buffers[b].Layout
	for v := range p.Views {
		if p.Views[v].Buffer != b {
			continue
		}
		if _, ok := relayout(p.Views[v].Layout, nat, l); !ok {
			return false
		}
	}
	return true
}

// commit records b as a member of pl.root.
func (ip *inplacer) commit(b int, pl placement) {
	ip.place[b] = pl
	ip.members[pl.root] = append(ip.members[pl.root], b)
	if pl.relaid {
		ip.relaid[pl.root] = true
	} else {
		ip.dense[pl.root] = true
	}
	ip.cache[b] = nil // its footprints moved with it
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
		if ip.place[pl.root].root != pl.root || !slices.Contains(ip.members[pl.root], b) {
			return fmt.Errorf("buffer %q: root %d is not its root's member list: %w", p.Buffers[b].Name, pl.root, ErrInvalidTrace)
		}
		if pl.root == b {
			var dense, relaid bool
			for _, m := range ip.members[b][1:] {
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
	for b, views := range ip.cache {
		for v, set := range views {
			saved := ip.cache[b]
			ip.cache[b] = nil
			fresh := ip.rootFootprint(trace.Ref{Buffer: b, View: v})
			ip.cache[b] = saved
			if !slices.Equal(fresh.Runs(), set.Runs()) {
				return fmt.Errorf("buffer %q view %d: cached footprint stale: %w", p.Buffers[b].Name, v, ErrInvalidTrace)
			}
		}
	}
	return nil
}
