package plan

import (
	"slices"
	"sort"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// Deriving a placement problem from a program. Time follows the op
// submission order, a linear extension of happens-before, each op lasting
// its cost (see opTimes). Each byte of a buffer is live over a window of
// op times:
//
//   - from the first op that uses it; or, when that op reads it (the host
//     filled it), from the buffer's allocation point;
//   - to one past the last op that uses it, and at least to the step that
//     lets it go (its discard or its buffer's release; never, for bytes
//     held to the end), in op time. On one engine, the window of bytes not
//     held to the end stops at their last use instead, and the pairs whose
//     deaths come in the other order than their uses are listed apart (see
//     tails.go): a dead byte's holder need not release it before another
//     buffer takes it over, only let it go first.
//
// Two pieces whose windows are disjoint may share bytes in a safe plan: the
// one that ends first is let go first (or the pair is listed), and on one
// engine all its uses come before the other's. With several engines that is not enough; such pairs
// are checked against happens-before and listed as Concurrent when some use
// of the first does not happen-before some use of the second. Bytes no op
// uses are free and belong to no piece.

// derived is a problem together with what maps it back to the program.
type derived struct {
	prob   *Problem
	itemOf []int   // per buffer: its item, -1 for externals
	shift  []int64 // per buffer: offset of its natural layout's first byte within its item
	// dense, when not nil, says that the problem may have too many conflicting pairs
	// to list (see dense.go): it is placed by solveDense, and Concurrent is not listed.
	dense *dense
	// shortLB, from deriveCoarse only, is the most bytes live at once when
	// every byte dies at its last use on one engine: no higher than
	// derive's lower bound, so a lower bound of derive's problem too.
	shortLB int64
	// fine, from deriveCoarse only, holds derive's pieces, built from the
	// same segments, for deriveFrom to finish.
	fine *deriver
	// scratch is the memory the problem lives in, for release to home.
	scratch []*deriveScratch
	home    *Scratch
}

// segment is one elementary byte range of an item with its uses. With
// several engines, the first and last op using it on each engine are kept
// in a flat array beside the segments (see derive).
type segment struct {
	lo, hi      int64
	first, last int  // op indices, -1 when unused
	readFirst   bool // the first op using it reads it
	firstOwner  int  // buffer whose use came first
	death       int  // op time the bytes are let go
	firstDeath  int  // the earliest op time a buffer of the group covering them lets them go
}

// pieceInfo keeps, for one piece of a multi-engine problem, the first and
// last op using its bytes on each engine (-1: none).
type pieceInfo struct {
	item, piece     int
	firstOn, lastOn []int
}

// itemUse is one op's use of an item's bytes, in item coordinates.
type itemUse struct {
	op, owner int
	read      bool
	set       *ranges.Set // shared: read only
}

// deathRun is bytes [lo, hi) of an item let go at one op time.
type deathRun struct {
	death  int
	lo, hi int64
}

// derive builds the placement problem of ip's program under its in-place
// decisions: one item per root, holding the root and its members. It reads
// the program as the checker reads a plan's placements (relaid members are
// views of the root, the group is released with the last of it). On one
// engine, the window of bytes not held to the end stops at their last use
// and the pairs whose deaths come in the other order are listed apart (see
// shortenTails).
func derive(ip *inplacer) *derived { return deriveFrom(ip, nil) }

// deriveFrom is derive finishing the fine pieces deriveCoarse built
// beside its own in coarse (nil: none), from the segments both cut each
// root into.
func deriveFrom(ip *inplacer, coarse *derived) *derived {
	var dv *deriver
	if coarse != nil && coarse.fine != nil {
		dv, coarse.fine = coarse.fine, nil
		copy(dv.d.itemOf, coarse.itemOf)
		copy(dv.d.shift, coarse.shift)
	} else {
		dv = newDeriver(ip)
		dv.addItems(dv.fineWindow, nil)
	}
	if dv.nEng == 1 {
		dv.pieces, dv.pieceAt, dv.d.prob.Concurrent = shortenTails(dv.pieces, dv.deaths, dv.pieceAt)
	}
	return dv.finish()
}

// fineWindow is derive's window of a segment: on one engine, bytes not
// held to the end stop at their last use.
func (dv *deriver) fineWindow(sg *segment, start, stop int) (int, int) {
	if dv.nEng == 1 && sg.death != dv.end {
		return dv.at[start], dv.at[sg.last+1] // the tail up to death is kept apart
	}
	return dv.at[start], dv.at[stop]
}

// deriveCoarse is derive with every used byte's window running on to its
// release, as if no byte died at its last use: more conflicts, never
// fewer, so a placement valid for it is valid for derive's problem. Its
// few pieces make the greedy start cheap; planProgram uses it when the
// greedy placement it gives already meets derive's lower bound, shortLB:
// the most bytes live at once when every byte not held to the end dies at
// its last use on one engine.
func deriveCoarse(ip *inplacer) *derived {
	dv := newDeriver(ip)
	var fine *deriver
	if dv.nEng == 1 {
		fine = newDeriverLike(ip, dv)
	}
	at := dv.at
	delta := make([]int64, len(at)+1) // live-byte changes per op index, windows cut at last use
	dv.addItems(func(sg *segment, start, stop int) (int, int) {
		short := stop
		if dv.nEng == 1 && sg.death != dv.end {
			short = sg.last + 1
		}
		delta[start] += sg.hi - sg.lo
		delta[short] -= sg.hi - sg.lo
		return at[start], at[stop]
	}, fine)
	d := dv.d
	d.fine = fine
	var live int64
	for _, it := range d.prob.Items {
		d.shortLB = max(d.shortLB, it.Size)
	}
	for _, x := range delta {
		live += x
		d.shortLB = max(d.shortLB, live)
	}
	return dv.finish()
}

// deriver holds what derive and deriveCoarse share: the program's op
// times, the problem being built, and the scratch reused from root to root.
type deriver struct {
	ip          *inplacer
	scratch     *deriveScratch // where the slices below come from (save)
	p           *trace.Program
	d           *derived // the problem being built
	opClock              // the program's op times, shared by derivations of it
	rootScratch          // per root, reused
	itemPieces           // the pieces of every item, one item after another
}

// opClock maps the program's steps and ops to op times (see opTimes); it
// depends on the program only, so newDeriverLike shares it.
type opClock struct {
	nOps, nEng int
	end        int   // the window end of bytes held to the end
	at         []int // op positions to op times (opTimes)
	opsBefore  []int // opsBefore[s]: the number of ops among steps [0, s), a step's op time
	allocPoint []int // per buffer: its allocation point (allocPoints)
}

// rootScratch is what a deriver rebuilds for each root's item.
type rootScratch struct {
	used   []itemUse
	dead   []deathRun
	bounds []int64
	segs   []segment
	on     []int                // per segment: first then last op on each engine
	seen   map[*ranges.Set]bool // sets whose bounds are in: many uses share one
	kept   []*ranges.Set        // the first few sets whose bounds went in, to find equal ones
	merge  []int64              // scratch of sortRuns
}

// itemPieces is the pieces of every item, one item after another.
type itemPieces struct {
	pieces  []Piece
	deaths  []Time // per piece: when the last and the first buffer covering its bytes let them go
	pieceAt []int  // per item: its first piece; then the number of pieces
	infos   []pieceInfo
	infoOn  []int // per piece of infos: first then last op on each engine
}

func newDeriver(ip *inplacer) *deriver { return newDeriverLike(ip, nil) }

// newDeriverLike is newDeriver sharing like's op times and allocation
// points (nil: computed).
func newDeriverLike(ip *inplacer, like *deriver) *deriver {
	p := ip.p
	dv := &deriver{ip: ip, p: p, opClock: opClock{nOps: len(p.Ops), nEng: len(p.Trace.Engines)},
		rootScratch: rootScratch{seen: map[*ranges.Set]bool{}}}
	sc := ip.scratch.get()
	dv.scratch = sc
	dv.pieces, dv.deaths, dv.used, dv.dead = sc.pieces[:0], sc.deaths[:0], sc.used[:0], sc.dead[:0]
	dv.bounds, dv.merge, dv.segs, dv.on = sc.bounds[:0], sc.merge[:0], sc.segs[:0], sc.on[:0]
	dv.end = dv.nOps + 1
	if like != nil {
		dv.at, dv.opsBefore, dv.allocPoint = like.at, like.opsBefore, like.allocPoint
	} else {
		dv.at, dv.opsBefore = opTimes(p), make([]int, len(p.Trace.Steps)+1)
		for i := range p.Trace.Steps {
			dv.opsBefore[i+1] = dv.opsBefore[i]
			if p.Trace.Steps[i].Kind == trace.KindOp {
				dv.opsBefore[i+1]++
			}
		}
		dv.allocPoint = allocPoints(p, dv.opsBefore)
	}
	dv.d = &derived{prob: &Problem{Align: p.Trace.Granule}, home: ip.scratch, itemOf: make([]int, len(p.Buffers)),
		shift: make([]int64, len(p.Buffers))}
	roots := 0
	for b := range dv.d.itemOf {
		dv.d.itemOf[b] = -1
		if !p.Buffers[b].External && ip.place[b].root == b {
			roots++
		}
	}
	dv.d.prob.Items = make([]Item, 0, roots)
	dv.pieceAt = make([]int, 0, roots+1)
	return dv
}

// deathTime is the op time of step, end for -1 (held to the end).
func (dv *deriver) deathTime(step int) int {
	if step < 0 {
		return dv.end
	}
	return dv.opsBefore[step]
}

// addItems adds one item per root, with a piece per run of used segments
// that share their window. win maps a segment's window [start, stop) in op
// positions to the piece's window in op time. twin, when not nil, is given
// the same items, with pieces of the same segments under its fineWindow
// (one engine only: the segments' per-engine ops stay dv's).
func (dv *deriver) addItems(win func(sg *segment, start, stop int) (int, int), twin *deriver) {
	p, ip := dv.p, dv.ip
	for r := range p.Buffers {
		if p.Buffers[r].External || ip.place[r].root != r {
			continue
		}
		item := len(dv.d.prob.Items)
		dv.cutSegments(r, item)
		dv.pieceAt = append(dv.pieceAt, len(dv.pieces))
		first := len(dv.pieces)
		for i := range dv.segs {
			if sg := &dv.segs[i]; sg.first >= 0 { // unused bytes are free
				dv.addPiece(item, first, i, win)
			}
		}
		it := Item{Name: p.Buffers[r].Name, Size: p.Buffers[r].Size}
		dv.d.prob.Items = append(dv.d.prob.Items, it)
		if twin != nil {
			own := twin.segs
			twin.segs = dv.segs
			twin.pieceAt = append(twin.pieceAt, len(twin.pieces))
			first := len(twin.pieces)
			for i := range dv.segs {
				if dv.segs[i].first >= 0 {
					twin.addPiece(item, first, i, twin.fineWindow)
				}
			}
			twin.segs = own
			twin.d.prob.Items = append(twin.d.prob.Items, it)
		}
	}
	dv.pieceAt = append(dv.pieceAt, len(dv.pieces))
	if twin != nil {
		twin.pieceAt = append(twin.pieceAt, len(twin.pieces))
	}
}

// cutSegments cuts root r's item (numbered item) into the elementary
// segments of its uses' footprints and of its death runs (dv.segs), and
// gives each its uses and deaths.
func (dv *deriver) cutSegments(r, item int) {
	p, ip := dv.p, dv.ip
	size := p.Buffers[r].Size
	dv.used, dv.dead = dv.used[:0], dv.dead[:0]
	clear(dv.seen)
	clear(dv.kept)
	dv.kept = dv.kept[:0]
	dv.bounds = append(dv.bounds[:0], 0, size)
	for _, m := range ip.group(r) {
		dv.d.itemOf[m] = item
		dv.d.shift[m] = ip.place[m].layout.Offset
		owner := m
		if ip.relaid[r] {
			owner = r // the checker sees the bytes as the root's
		}
		for _, u := range ip.usesOf[m] {
			use := &p.Ops[u.Op].Uses[u.Use]
			set := ip.rootFootprint(use.Ref)
			dv.used = append(dv.used, itemUse{op: u.Op, owner: owner, read: use.Access&trace.AccessRead != 0, set: set})
			if !dv.seen[set] {
				dv.seen[set] = true
				if dv.keptEqual(set) {
					continue // another set of the same runs put them in
				}
				for _, run := range set.Runs() {
					if run.Lo != 0 || run.Hi != size { // the whole item's bounds are in
						dv.bounds = append(dv.bounds, run.Lo, run.Hi)
					}
				}
			}
		}
	}
	dv.dead = ip.deaths(r, dv.dead, dv.deathTime)
	for _, x := range dv.dead {
		if x.lo != 0 || x.hi != size {
			dv.bounds = append(dv.bounds, x.lo, x.hi)
		}
	}
	bounds := sortRuns(dv.bounds, &dv.merge)
	bounds = slices.Compact(bounds)
	for len(bounds) > 0 && bounds[0] < 0 {
		bounds = bounds[1:]
	}
	for len(bounds) > 0 && bounds[len(bounds)-1] > size {
		bounds = bounds[:len(bounds)-1]
	}
	dv.segs = slices.Grow(dv.segs[:0], len(bounds))
	for i := 0; i+1 < len(bounds); i++ {
		dv.segs = append(dv.segs, segment{lo: bounds[i], hi: bounds[i+1], first: -1, last: -1, death: -1, firstDeath: -1})
	}
	if dv.nEng > 1 {
		dv.on = slices.Grow(dv.on[:0], 2*dv.nEng*len(dv.segs))[:2*dv.nEng*len(dv.segs)]
		for i := range dv.on {
			dv.on[i] = -1
		}
	}
	dv.applyUses()
	dv.applyDeaths()
}

// maxKept is the number of distinct sets cutSegments compares a new set
// with, which bounds the cost of the comparisons for a root of many uses.
const maxKept = 16

// keptEqual reports whether set has the runs of a set whose bounds are in
// already (two views of the same bytes: the uses of a strided tensor through
// views by several names), and else keeps it among the first maxKept. A set
// of a few runs is not compared: its bounds cost less than the comparison.
func (dv *deriver) keptEqual(set *ranges.Set) bool {
	runs := set.Runs()
	if len(runs) < 8 {
		return false
	}
	for _, k := range dv.kept {
		if kr := k.Runs(); len(kr) == len(runs) && kr[0] == runs[0] && kr[len(kr)-1] == runs[len(runs)-1] &&
			slices.Equal(kr, runs) {
			return true
		}
	}
	if len(dv.kept) < maxKept {
		dv.kept = append(dv.kept, set)
	}
	return false
}

// applyUses gives each segment the first and last op using it (and, with
// several engines, the first and last on each engine).
func (dv *deriver) applyUses() {
	segs, nEng := dv.segs, dv.nEng
	for _, u := range dv.used {
		eng := dv.p.Ops[u.op].Engine
		i := 0 // runs ascend, so the segment index only moves forward
		for _, run := range u.set.Runs() {
			// The first segment at or after run.Lo, by galloping search: a use
			// of a few bytes far into a buffer of many segments skips them at
			// once, and the next run of a strided view, a few segments on, is
			// found in a few steps.
			i = gallop(segs, i, run.Lo)
			for ; i < len(segs) && segs[i].lo < run.Hi; i++ {
				sg := &segs[i]
				if sg.first < 0 || u.op < sg.first {
					sg.first, sg.readFirst, sg.firstOwner = u.op, u.read, u.owner
				} else if u.op == sg.first && u.read {
					sg.readFirst = true
				}
				sg.last = max(sg.last, u.op)
				if nEng > 1 {
					f, l := &dv.on[2*nEng*i+eng], &dv.on[2*nEng*i+nEng+eng]
					if *f < 0 || u.op < *f {
						*f = u.op
					}
					*l = max(*l, u.op)
				}
			}
		}
	}
}

// applyDeaths gives each segment the latest and the earliest op time at
// which a buffer of its group lets its bytes go.
func (dv *deriver) applyDeaths() {
	segs := dv.segs
	for _, x := range dv.dead {
		i, _ := slices.BinarySearchFunc(segs, x.lo, func(sg segment, lo int64) int { return cmp64(sg.lo, lo) })
		for ; i < len(segs) && segs[i].lo < x.hi; i++ {
			segs[i].death = max(segs[i].death, x.death)
			if segs[i].firstDeath < 0 || x.death < segs[i].firstDeath {
				segs[i].firstDeath = x.death
			}
		}
	}
}

// addPiece adds the piece of used segment i of item (whose pieces start at
// first): its window runs from its first use (or its owner's allocation
// point, when that use reads it) to one past its last use, and at least to
// its death; win maps it to op time. On one engine it extends the previous
// piece instead when the two are adjacent with the same window and deaths.
func (dv *deriver) addPiece(item, first, i int, win func(sg *segment, start, stop int) (int, int)) {
	sg := &dv.segs[i]
	nEng := dv.nEng
	start := sg.first
	if sg.readFirst {
		ap := dv.allocPoint[sg.firstOwner]
		start = min(start, ap)
		if nEng > 1 && ap < dv.nOps {
			e := dv.p.Ops[ap].Engine
			if f := &dv.on[2*nEng*i+e]; *f < 0 || ap < *f {
				*f = ap
			}
		}
	}
	stop := max(sg.last+1, sg.death)
	death, firstDeath := dv.at[stop], dv.at[stop]
	if sg.firstDeath >= 0 {
		firstDeath = dv.at[sg.firstDeath] // not past the group's last use: its own buffer's
	}
	start, stop = win(sg, start, stop)
	if m := len(dv.pieces); m > first && nEng == 1 {
		prev := &dv.pieces[m-1]
		if prev.Hi == sg.lo && prev.Start == start && prev.End == stop && dv.deaths[2*m-2] == death &&
			dv.deaths[2*m-1] == firstDeath {
			prev.Hi = sg.hi
			return
		}
	}
	dv.pieces = append(dv.pieces, Piece{Lo: sg.lo, Hi: sg.hi, Start: start, End: stop})
	dv.deaths = append(dv.deaths, death, firstDeath)
	if nEng > 1 {
		dv.infos = append(dv.infos, pieceInfo{item: item, piece: len(dv.pieces) - 1 - first})
		dv.infoOn = append(dv.infoOn, dv.on[2*nEng*i:2*nEng*(i+1)]...)
	}
}

// save stores the slices dv grew in its scratch, for the next derivation
// that takes it.
func (dv *deriver) save() {
	sc := dv.scratch
	sc.pieces, sc.deaths, sc.used, sc.dead = dv.pieces[:0], dv.deaths[:0], dv.used[:0], dv.dead[:0]
	sc.bounds, sc.merge, sc.segs, sc.on = dv.bounds[:0], dv.merge[:0], dv.segs[:0], dv.on[:0]
}

// finish hands each item its pieces and, with several engines, lists the
// concurrent pairs.
func (dv *deriver) finish() *derived {
	d, nEng := dv.d, dv.nEng
	dv.save()
	d.scratch = append(d.scratch, dv.scratch)
	for i := range d.prob.Items {
		lo, hi := dv.pieceAt[i], dv.pieceAt[i+1]
		if lo < hi {
			d.prob.Items[i].Pieces = dv.pieces[lo:hi:hi]
		}
	}
	if nEng > 1 {
		for i := range dv.infos {
			o := dv.infoOn[2*nEng*i : 2*nEng*(i+1)]
			dv.infos[i].firstOn, dv.infos[i].lastOn = o[:nEng:nEng], o[nEng:]
		}
		if dv.ip.order == nil {
			if o, err := trace.NewOrder(dv.p); err == nil {
				dv.ip.order = o
			}
		}
		if dv.ip.order != nil {
			if d.dense = denseCheck(d.prob, dv.infos, dv.ip.order); d.dense != nil {
				return d // too many pairs to list: solveDense places it without them
			}
		}
		d.prob.Concurrent = dv.ip.concurrent(d.prob, dv.infos)
	}
	return d
}

// allocPoints returns, per buffer, the allocation point: the first op on
// its engine submitted after its alloc step (len(p.Ops) when none is).
func allocPoints(p *trace.Program, opsBefore []int) []int {
	nOps := len(p.Ops)
	out := make([]int, len(p.Buffers))
	if len(p.Trace.Engines) == 1 {
		for b := range p.Buffers {
			out[b] = opsBefore[p.Buffers[b].Step]
		}
		return out
	}
	// next[k*nEng+e]: the first op on engine e at or after op position k.
	nEng := len(p.Trace.Engines)
	next := make([]int, (nOps+1)*nEng)
	for e := range nEng {
		next[nOps*nEng+e] = nOps
	}
	for k := nOps - 1; k >= 0; k-- {
		copy(next[k*nEng:(k+1)*nEng], next[(k+1)*nEng:(k+2)*nEng])
		next[k*nEng+p.Ops[k].Engine] = k
	}
	for b := range p.Buffers {
		out[b] = next[opsBefore[p.Buffers[b].Step]*nEng+p.Buffers[b].Engine]
	}
	return out
}

// opTimes maps op positions 0..len(Ops)+1 to times on the trace's own
// clock: where each op would start if all ran one after another for their
// cost (the position past the end for bytes held to the end). The map is
// strictly increasing, so windows keep exactly their intersections; only
// the lengths the search's preorders weigh change. When the costs would
// overflow, positions are used as they are.
func opTimes(p *trace.Program) []int {
	n := len(p.Ops)
	at := make([]int, n+2)
	for k := range p.Ops {
		c := p.Ops[k].Cost
		if c <= 0 || c > maxSize/int64(n+2) {
			for k := range at {
				at[k] = k
			}
			return at
		}
		at[k+1] = at[k] + int(c)
	}
	at[n+1] = at[n] + 1
	return at
}

// sortRuns sorts xs, which is mostly a few long ascending runs (each
// footprint's runs ascend), by merging its maximal ascending runs pairwise,
// O(N log R) for R runs; tmp is scratch, grown as needed. It returns the
// sorted values, in xs or in *tmp.
func sortRuns(xs []int64, tmp *[]int64) []int64 {
	var starts []int // the first index of each ascending run, then len(xs)
	var small [64]int
	starts = small[:0]
	for i := range xs {
		if i == 0 || xs[i] < xs[i-1] {
			starts = append(starts, i)
		}
	}
	if len(starts) > len(xs)/4+1 {
		slices.Sort(xs) // short runs: merging gains nothing
		return xs
	}
	starts = append(starts, len(xs))
	src := xs
	dst := slices.Grow((*tmp)[:0], len(xs))[:len(xs)]
	*tmp = dst
	for len(starts) > 2 {
		next := starts[:0]
		for k := 0; k+1 < len(starts); k += 2 {
			lo := starts[k]
			next = append(next, lo)
			if k+2 >= len(starts) { // an odd run out: copied as it is
				copy(dst[lo:starts[k+1]], src[lo:starts[k+1]])
				continue
			}
			mid, hi := starts[k+1], starts[k+2]
			a, b, o := lo, mid, lo
			for a < mid && b < hi {
				if src[b] < src[a] {
					dst[o] = src[b]
					b++
				} else {
					dst[o] = src[a]
					a++
				}
				o++
			}
			o += copy(dst[o:], src[a:mid])
			copy(dst[o:], src[b:hi])
		}
		last := starts[len(starts)-1]
		starts = append(next, last)
		src, dst = dst, src
	}
	return src
}

// gallop returns the first index at or after i whose segment starts at or
// after lo (len(segs) if none), with segs ascending: doubling steps from i,
// then a binary search within the last step, O(log d) for the distance d.
func gallop(segs []segment, i int, lo int64) int {
	if i >= len(segs) || segs[i].lo >= lo {
		return i
	}
	// segs[i+prev].lo < lo throughout.
	prev, step := 0, 1
	for i+step < len(segs) && segs[i+step].lo < lo {
		prev, step = step, 2*step
	}
	hi := min(i+step, len(segs))
	return i + prev + 1 + sort.Search(hi-(i+prev+1), func(k int) bool { return segs[i+prev+1+k].lo >= lo })
}
