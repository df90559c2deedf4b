package liveness

import (
	"github.com/subarena/subarena/ranges"
)

// pieceRun is one run of a whole-mode piece: its bytes r and the piece's
// place in Index.pieces.
type pieceRun struct {
	r     ranges.Range
	piece int32
}

// pieceIndex finds the pieces over given bytes: the runs of every piece
// (pieces are disjoint, so their runs are too), in address order. A
// reclaim looks up the pieces that the bytes whose pins changed touch,
// and a window's pinned bytes, instead of passing over every piece.
//
// It is a treap keyed by the runs' starts (disjoint runs ordered by start
// are ordered by end too): insert, delete and lookup O(log n) expected,
// a query for the runs over some bytes O(log n + k) for k found. Nodes
// live in a slice addressed by int32 (0: none) and are reused through a
// free list, so once it has grown nothing allocates.
type pieceIndex struct {
	nodes []pieceNode
	root  int32
	free  int32 // linked through left
	n     int
	seed  uint64
	found []pieceRun // what the last query found (overlapping)
}

type pieceNode struct {
	pieceRun
	prio        uint32
	left, right int32
}

// len returns the number of runs indexed.
func (p *pieceIndex) len() int { return p.n }

func (p *pieceIndex) newNode(pr pieceRun) int32 {
	if len(p.nodes) == 0 {
		p.nodes = append(p.nodes, pieceNode{}) // the sentinel
	}
	p.seed += 0x9e3779b97f4a7c15
	z := p.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	nd := pieceNode{pieceRun: pr, prio: uint32(z >> 32)}
	if i := p.free; i != 0 {
		p.free = p.nodes[i].left
		p.nodes[i] = nd
		return i
	}
	p.nodes = append(p.nodes, nd)
	return int32(len(p.nodes) - 1)
}

// split cuts the subtree n into the runs starting before lo and the rest.
func (p *pieceIndex) split(n int32, lo int64) (l, r int32) {
	if n == 0 {
		return 0, 0
	}
	nd := &p.nodes[n]
	if nd.r.Lo < lo {
		a, b := p.split(nd.right, lo)
		p.nodes[n].right = a
		return n, b
	}
	a, b := p.split(nd.left, lo)
	p.nodes[n].left = b
	return a, n
}

// merge joins a and b, every run of a starting before every run of b.
func (p *pieceIndex) merge(a, b int32) int32 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	if p.nodes[a].prio > p.nodes[b].prio {
		p.nodes[a].right = p.merge(p.nodes[a].right, b)
		return a
	}
	p.nodes[b].left = p.merge(a, p.nodes[b].left)
	return b
}

// add records r, disjoint from every run indexed, as a run of piece.
func (p *pieceIndex) add(r ranges.Range, piece int32) {
	nn := p.newNode(pieceRun{r: r, piece: piece})
	l, rt := p.split(p.root, r.Lo)
	p.root = p.merge(p.merge(l, nn), rt)
	p.n++
}

// del deletes the run starting at lo, if any.
func (p *pieceIndex) del(lo int64) {
	l, rt := p.split(p.root, lo)
	m, rt := p.split(rt, lo+1)
	if m != 0 {
		p.nodes[m] = pieceNode{left: p.free}
		p.free = m
		p.n--
	}
	p.root = p.merge(l, rt)
}

// overlapping returns the runs sharing a byte with r, in address order;
// the slice is p's, valid until the next query.
func (p *pieceIndex) overlapping(r ranges.Range) []pieceRun {
	p.found = p.found[:0]
	if !r.Empty() {
		p.collect(p.root, r)
	}
	return p.found
}

func (p *pieceIndex) collect(n int32, r ranges.Range) {
	for n != 0 {
		nd := &p.nodes[n]
		switch {
		case nd.r.Hi <= r.Lo:
			n = nd.right // n and its left subtree end before r
		case nd.r.Lo >= r.Hi:
			n = nd.left // n and its right subtree start after r
		default:
			p.collect(nd.left, r)
			p.found = append(p.found, nd.pieceRun)
			n = nd.right
		}
	}
}

// remove forgets the bytes r, wherever they lie: a run that r cuts keeps
// what lies outside r.
func (p *pieceIndex) remove(r ranges.Range) {
	prs := p.overlapping(r)
	if len(prs) == 0 {
		return
	}
	first, last := prs[0], prs[len(prs)-1]
	for _, pr := range prs {
		p.del(pr.r.Lo)
	}
	if first.r.Lo < r.Lo {
		p.add(ranges.Range{Lo: first.r.Lo, Hi: r.Lo}, first.piece)
	}
	if last.r.Hi > r.Hi {
		p.add(ranges.Range{Lo: r.Hi, Hi: last.r.Hi}, last.piece)
	}
}

// retag records that the piece with the runs bytes now sits at place
// piece.
func (p *pieceIndex) retag(bytes *ranges.Set, piece int32) {
	for _, r := range bytes.Runs() {
		for n := p.root; n != 0; {
			nd := &p.nodes[n]
			if r.Lo < nd.r.Lo {
				n = nd.left
			} else if r.Lo > nd.r.Lo {
				n = nd.right
			} else {
				nd.piece = piece
				break
			}
		}
	}
}

// each calls fn with every run in address order (CheckInvariants).
func (p *pieceIndex) each(fn func(pieceRun)) { p.walk(p.root, fn) }

func (p *pieceIndex) walk(n int32, fn func(pieceRun)) {
	if n == 0 {
		return
	}
	p.walk(p.nodes[n].left, fn)
	fn(p.nodes[n].pieceRun)
	p.walk(p.nodes[n].right, fn)
}
