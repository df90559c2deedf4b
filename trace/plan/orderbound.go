package plan

import (
	"fmt"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// maxOrderBoundOps caps OrderBound's op count: it keeps two n×n bit
// matrices.
const maxOrderBoundOps = 1 << 15

// OrderBound returns a height no safe plan of p's trace is below, in its own
// op order or in any other that keeps every op after those it depends on
// (OpDependencies): Reorder's orders included. When a plan's size meets it,
// no reordering can lower that plan. One-engine traces only (an error
// matching ErrNotReordered otherwise).
//
// At each op k it counts the bytes every such order holds at once: the
// bytes k reads and writes (for an inplace op only the larger of the two,
// since its output may take the bytes of an input), and each byte of
// another use that an op depending on k's ancestors must use before k and
// one of k's descendants after it (or that is held to the end once used):
// no buffer can take such a byte during k, whatever the order. A host
// fill counts from the byte's first reader, where a trace may allocate it.
//
// Cost: O(n²/64) words and time for the ancestor and descendant sets of n
// ops, plus O(n·U) for U uses; an error matching ErrTooLarge beyond 2¹⁵
// ops.
func OrderBound(p *trace.Program) (int64, error) {
	if p == nil || p.Trace == nil {
		return 0, fmt.Errorf("nil program: %w", ErrInvalidTrace)
	}
	if n := len(p.Trace.Engines); n != 1 {
		return 0, fmt.Errorf("%w: %d engines", ErrNotReordered, n)
	}
	n := len(p.Ops)
	if n > maxOrderBoundOps {
		return 0, fmt.Errorf("%w: %d ops for the order bound (at most %d)", ErrTooLarge, n, maxOrderBoundOps)
	}
	p = p.Clone()
	g := newDepGraph(p)
	anc := reachable(g.pred, false) // anc row k: ops that run before k in every order
	desc := reachable(g.succ, true) // desc row k: ops that run after k in every order
	return mostLive(p, anc, desc), nil
}

// bitMatrix is a square bit matrix over ops, one row of words per op.
type bitMatrix struct {
	words int
	bits  []uint64
}

// row returns row k.
func (m bitMatrix) row(k int) []uint64 { return m.bits[k*m.words : (k+1)*m.words] }

// has reports whether bit j of row k is set.
func (m bitMatrix) has(k, j int) bool { return m.bits[k*m.words+j/64]&(1<<(j%64)) != 0 }

// reachable returns the matrix whose row k holds every op reachable from op k through
// edges (edges[k] lists the ops k has an edge to). The edges of an acyclic graph must all
// lead to lower ops, or with reverse set all to higher ones, so that rows are complete
// before they are read.
func reachable(edges [][]int32, reverse bool) bitMatrix {
	n := len(edges)
	m := bitMatrix{words: (n + 63) / 64}
	m.bits = make([]uint64, n*m.words)
	for i := range n {
		k := i
		if reverse {
			k = n - 1 - i
		}
		r := m.row(k)
		for _, j := range edges[k] {
			for w, x := range m.row(int(j)) {
				r[w] |= x
			}
			r[j/64] |= 1 << (j % 64)
		}
	}
	return m
}

// mostLive returns the most bytes held at once while an op k runs, over
// every k, in every order where the ops of anc's row k run before k and
// those of desc's row k after it (see OrderBound).
func mostLive(p *trace.Program, anc, desc bitMatrix) int64 {
	n := len(p.Ops)
	var best int64
	// Uses per buffer.
	type use struct {
		op    int
		fp    ranges.Set
		exact bool
	}
	uses := make([][]use, len(p.Buffers))
	for k := range p.Ops {
		for _, u := range p.Ops[k].Uses {
			b := u.Ref.Buffer
			if p.Buffers[b].External {
				continue
			}
			f, exact := p.Footprint(u.Ref) // a superset when inexact: never counted
			uses[b] = append(uses[b], use{op: k, fp: f, exact: exact})
		}
	}
	exact := func(r trace.Ref) bool { _, ok := p.Footprint(r); return ok }
	var before, after, own ranges.Set
	for k := range n {
		op := &p.Ops[k]
		// k's own operands, per buffer: exact footprints only. Reads of
		// different buffers are disjoint, and so are writes; an inplace op's
		// write may share the bytes of a read.
		var reads, writes, total int64
		opBytes := map[int]*[3]ranges.Set{} // read, written, either
		for _, u := range op.Uses {
			b := u.Ref.Buffer
			if p.Buffers[b].External || !exact(u.Ref) {
				continue
			}
			f, _ := p.Footprint(u.Ref)
			s := opBytes[b]
			if s == nil {
				s = &[3]ranges.Set{}
				opBytes[b] = s
			}
			if u.Access&trace.AccessRead != 0 {
				s[0].AddSet(&f)
			}
			if u.Access&trace.AccessWrite != 0 {
				s[1].AddSet(&f)
			}
			s[2].AddSet(&f)
		}
		for _, s := range opBytes {
			reads += s[0].Len()
			writes += s[1].Len()
			total += s[2].Len()
		}
		if op.InPlace {
			total = max(reads, writes)
		}
		// Bytes of other uses that straddle k in every order.
		for b, us := range uses {
			var inA, inD bool
			for _, u := range us {
				if u.op != k && anc.has(k, u.op) {
					inA = true
				}
				if u.op != k && desc.has(k, u.op) {
					inD = true
				}
			}
			held := p.Buffers[b].Release < 0
			if !inA || !inD && !held {
				continue
			}
			before.Reset()
			after.Reset()
			for _, u := range us {
				if !u.exact {
					continue
				}
				if anc.has(k, u.op) {
					before.AddSet(&u.fp)
				}
				if desc.has(k, u.op) {
					after.AddSet(&u.fp)
				}
			}
			live := &before
			if !held {
				live = intersect(&before, &after, &own)
			}
			c := live.Len()
			if s := opBytes[b]; s != nil {
				c -= overlapLen(live, &s[2])
			}
			total += c
		}
		best = max(best, total)
	}
	return best
}

// intersect puts a ∩ b into out and returns it.
func intersect(a, b, out *ranges.Set) *ranges.Set {
	out.Reset()
	ar, br := a.Runs(), b.Runs()
	for i, j := 0, 0; i < len(ar) && j < len(br); {
		lo, hi := max(ar[i].Lo, br[j].Lo), min(ar[i].Hi, br[j].Hi)
		if lo < hi {
			out.Add(ranges.Range{Lo: lo, Hi: hi})
		}
		if ar[i].Hi < br[j].Hi {
			i++
		} else {
			j++
		}
	}
	return out
}

// overlapLen returns |a ∩ b|.
func overlapLen(a, b *ranges.Set) int64 {
	var n int64
	ar, br := a.Runs(), b.Runs()
	for i, j := 0, 0; i < len(ar) && j < len(br); {
		lo, hi := max(ar[i].Lo, br[j].Lo), min(ar[i].Hi, br[j].Hi)
		if lo < hi {
			n += hi - lo
		}
		if ar[i].Hi < br[j].Hi {
			i++
		} else {
			j++
		}
	}
	return n
}
