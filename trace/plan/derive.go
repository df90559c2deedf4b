package plan

import (
	"slices"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// Deriving a placement problem from a program. Time is the op index: the
// submission order, a linear extension of happens-before. Each byte of a
// buffer is live over a window of op times:
//
//   - from the first op that uses it; or, when that op reads it (the host
//     filled it), from the buffer's allocation point;
//   - to one past the last op that uses it, and at least to the step that
//     lets it go (its discard or its buffer's release; never, for bytes
//     held to the end), in op time.
//
// Two pieces whose windows are disjoint may share bytes in a safe plan: the
// one that ends first is let go first, and on one engine all its uses come
// before the other's. With several engines that is not enough; such pairs
// are checked against happens-before and listed as Concurrent when some use
// of the first does not happen-before some use of the second. Bytes no op
// uses are free and belong to no piece.

// member is a dense in-place member: its bytes are those of root at shift.
type member struct {
	root  int
	shift int64
}

// derived is a problem together with what maps it back to the program.
type derived struct {
	prob   *Problem
	itemOf []int   // per buffer: its item, -1 for externals
	shift  []int64 // per buffer: offset within its item
}

// segment is one elementary byte range of an item with its uses.
type segment struct {
	lo, hi      int64
	first, last int  // op indices, -1 when unused
	readFirst   bool // the first op using it reads it
	firstOwner  int  // buffer whose use came first
	death       int  // op time the bytes are let go; never when held
	firstOn     []int
	lastOn      []int
}

// pieceInfo keeps, for one piece of a multi-engine problem, the first and
// last op using its bytes on each engine (-1: none).
type pieceInfo struct {
	item, piece     int
	firstOn, lastOn []int
}

// derive builds the problem of program p, where members maps buffer
// indices to their dense in-place root, and hb is happens-before on ops.
func derive(p *trace.Program, members map[int]member, hb func(a, b int) bool) *derived {
	nOps := len(p.Ops)
	nEng := len(p.Trace.Engines)
	// opsBefore[s] is the number of ops among steps [0, s): the op time of a step.
	opsBefore := make([]int, len(p.Trace.Steps)+1)
	for i, s := range p.Trace.Steps {
		opsBefore[i+1] = opsBefore[i]
		if s.Kind == trace.KindOp {
			opsBefore[i+1]++
		}
	}
	end := nOps + 1 // the window end of bytes held to the end
	deathTime := func(step int) int {
		if step < 0 {
			return end
		}
		return opsBefore[step]
	}
	// allocPoint[b] is the first op on b's engine submitted after its alloc step.
	allocPoint := make([]int, len(p.Buffers))
	for b := range p.Buffers {
		allocPoint[b] = nOps
		for k := opsBefore[p.Buffers[b].Step]; k < nOps; k++ {
			if p.Ops[k].Engine == p.Buffers[b].Engine {
				allocPoint[b] = k
				break
			}
		}
	}
	d := &derived{prob: &Problem{Align: p.Trace.Granule}, itemOf: make([]int, len(p.Buffers)),
		shift: make([]int64, len(p.Buffers))}
	groups := map[int][]int{} // root -> members (root first)
	var roots []int
	for b := range p.Buffers {
		d.itemOf[b] = -1
		if p.Buffers[b].External {
			continue
		}
		if m, ok := members[b]; ok {
			groups[m.root] = append(groups[m.root], b)
			d.shift[b] = m.shift
			continue
		}
		roots = append(roots, b)
		groups[b] = append([]int{b}, groups[b]...)
	}
	usesOf := make([][]opUse, len(p.Buffers))
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			usesOf[use.Ref.Buffer] = append(usesOf[use.Ref.Buffer], opUse{k, u})
		}
	}
	var infos []pieceInfo
	for _, r := range roots {
		item := len(d.prob.Items)
		group := groups[r]
		size := p.Buffers[r].Size
		// Byte sets per use and per death piece, in item coordinates.
		type usedSet struct {
			op, owner int
			read      bool
			set       ranges.Set
		}
		type deadSet struct {
			death int
			set   ranges.Set
		}
		var used []usedSet
		var dead []deadSet
		bounds := []int64{0, size}
		for _, m := range group {
			d.itemOf[m] = item
			sh := d.shift[m]
			for _, u := range usesOf[m] {
				use := p.Ops[u.op].Uses[u.use]
				fp, _ := p.Footprint(use.Ref)
				set := fp.Clone()
				_ = set.Translate(sh)
				used = append(used, usedSet{op: u.op, owner: m, read: use.Access&trace.AccessRead != 0, set: set})
			}
			rest := ranges.FromRanges(ranges.Range{Lo: sh, Hi: sh + p.Buffers[m].Size})
			for _, v := range p.Buffers[m].Discards {
				fp, _ := p.Footprint(trace.Ref{Buffer: m, View: v})
				set := fp.Clone()
				_ = set.Translate(sh)
				got := ranges.Intersect(&rest, &set)
				if got.IsEmpty() {
					continue
				}
				rest.RemoveSet(&got)
				dead = append(dead, deadSet{death: deathTime(p.Views[v].Discard), set: got})
			}
			if !rest.IsEmpty() {
				dead = append(dead, deadSet{death: deathTime(p.Buffers[m].Release), set: rest})
			}
		}
		for _, u := range used {
			for _, r := range u.set.Runs() {
				bounds = append(bounds, r.Lo, r.Hi)
			}
		}
		for _, x := range dead {
			for _, r := range x.set.Runs() {
				bounds = append(bounds, r.Lo, r.Hi)
			}
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		for len(bounds) > 0 && bounds[0] < 0 {
			bounds = bounds[1:]
		}
		for len(bounds) > 0 && bounds[len(bounds)-1] > size {
			bounds = bounds[:len(bounds)-1]
		}
		segs := make([]segment, len(bounds)-1)
		for i := range segs {
			segs[i] = segment{lo: bounds[i], hi: bounds[i+1], first: -1, last: -1, death: -1}
			if nEng > 1 {
				segs[i].firstOn = make([]int, nEng)
				segs[i].lastOn = make([]int, nEng)
				for e := range nEng {
					segs[i].firstOn[e], segs[i].lastOn[e] = -1, -1
				}
			}
		}
		// forSegs calls f on every segment inside set.
		forSegs := func(set *ranges.Set, f func(*segment)) {
			for _, r := range set.Runs() {
				i, _ := slices.BinarySearch(bounds, r.Lo)
				for ; i < len(segs) && segs[i].lo < r.Hi; i++ {
					f(&segs[i])
				}
			}
		}
		// Uses come in op order per member, not across members: compare.
		for _, u := range used {
			eng := p.Ops[u.op].Engine
			forSegs(&u.set, func(s *segment) {
				if s.first < 0 || u.op < s.first {
					s.first, s.readFirst, s.firstOwner = u.op, u.read, u.owner
				} else if u.op == s.first && u.read {
					s.readFirst = true
				}
				s.last = max(s.last, u.op)
				if nEng > 1 {
					if s.firstOn[eng] < 0 || u.op < s.firstOn[eng] {
						s.firstOn[eng] = u.op
					}
					s.lastOn[eng] = max(s.lastOn[eng], u.op)
				}
			})
		}
		for _, x := range dead {
			forSegs(&x.set, func(s *segment) { s.death = max(s.death, x.death) })
		}
		it := Item{Name: p.Buffers[r].Name, Size: size}
		for i := range segs {
			s := &segs[i]
			if s.first < 0 {
				continue // no op uses these bytes: free
			}
			start := s.first
			if s.readFirst {
				ap := allocPoint[s.firstOwner]
				start = min(start, ap)
				if nEng > 1 && ap < nOps {
					e := p.Ops[ap].Engine
					if s.firstOn[e] < 0 || ap < s.firstOn[e] {
						s.firstOn[e] = ap
					}
				}
			}
			stop := max(s.last+1, s.death)
			if s.death < 0 {
				stop = s.last + 1
			}
			if m := len(it.Pieces); m > 0 {
				prev := &it.Pieces[m-1]
				if prev.Hi == s.lo && prev.Start == start && prev.End == stop && nEng == 1 {
					prev.Hi = s.hi
					continue
				}
			}
			it.Pieces = append(it.Pieces, Piece{Lo: s.lo, Hi: s.hi, Start: start, End: stop})
			if nEng > 1 {
				infos = append(infos, pieceInfo{item: item, piece: len(it.Pieces) - 1, firstOn: s.firstOn, lastOn: s.lastOn})
			}
		}
		d.prob.Items = append(d.prob.Items, it)
	}
	if nEng > 1 {
		d.prob.Concurrent = concurrentPairs(d.prob, infos, hb)
	}
	return d
}

// concurrentPairs lists the pieces of different items whose windows are
// disjoint but whose uses are not ordered by happens-before.
func concurrentPairs(prob *Problem, infos []pieceInfo, hb func(a, b int) bool) []PiecePair {
	ordered := func(a, b int) bool { // every use of piece a happens-before every use of piece b
		for _, x := range infos[a].lastOn {
			if x < 0 {
				continue
			}
			for _, y := range infos[b].firstOn {
				if y >= 0 && !hb(x, y) {
					return false
				}
			}
		}
		return true
	}
	var out []PiecePair
	for a := range infos {
		pa := prob.Items[infos[a].item].Pieces[infos[a].piece]
		for b := a + 1; b < len(infos); b++ {
			if infos[a].item == infos[b].item {
				continue
			}
			pb := prob.Items[infos[b].item].Pieces[infos[b].piece]
			var ok bool
			switch {
			case pa.End <= pb.Start:
				ok = ordered(a, b)
			case pb.End <= pa.Start:
				ok = ordered(b, a)
			default:
				continue // the windows intersect: a conflict already
			}
			if !ok {
				out = append(out, PiecePair{A: PieceRef{infos[a].item, infos[a].piece}, B: PieceRef{infos[b].item, infos[b].piece}})
			}
		}
	}
	return out
}
