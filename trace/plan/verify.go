package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/subarena/subarena/trace/internal/minheap"
)

// Verify checks a placement of a valid problem: one offset per item, each
// non-negative and aligned, and no two conflicting pieces sharing a byte.
// It returns the placement's height, the largest offset+size, or an error
// matching ErrConflict (or ErrInvalidProblem for a malformed problem or a
// wrong number of offsets). It works on the problem as given, not on the
// solver's compiled form, so it also guards the solver.
//
// It sweeps the pieces by start time, placed at their items' offsets, each
// against those still live. The live pieces of different items are
// byte-disjoint until a conflict, so one query of a segment tree over the
// pieces by first byte decides whether a piece meets a live one of another
// item: O(P log P) for P pieces, plus the listed concurrent pairs.
func Verify(p *Problem, offsets []int64) (int64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if len(offsets) != len(p.Items) {
		return 0, fmt.Errorf("%d offsets for %d items: %w", len(offsets), len(p.Items), ErrInvalidProblem)
	}
	a := p.align()
	var height int64
	for i, off := range offsets {
		if off < 0 || off%a != 0 || off > maxSize {
			return 0, fmt.Errorf("item %d (%q): offset %d negative, unaligned or too large: %w",
				i, p.Items[i].Name, off, ErrConflict)
		}
		height = max(height, off+p.Items[i].Size)
	}
	n := 0
	for _, it := range p.Items {
		n += len(it.Pieces)
	}
	spans := make([]placedSpan, 0, n)
	for i, it := range p.Items {
		for _, pc := range it.Pieces {
			spans = append(spans, placedSpan{offsets[i] + pc.Lo, offsets[i] + pc.Hi, pc.Start, pc.End, i})
		}
	}
	slices.SortFunc(spans, func(a, b placedSpan) int { return cmp.Compare(a.start, b.start) })
	clash := func(a, b placedSpan) error {
		if a.lo < b.hi && b.lo < a.hi {
			return fmt.Errorf("items %q and %q share bytes [%d, %d) during times [%d, %d) and [%d, %d): %w",
				p.Items[a.item].Name, p.Items[b.item].Name, max(a.lo, b.lo), min(a.hi, b.hi),
				a.start, a.end, b.start, b.end, ErrConflict)
		}
		return nil
	}
	// The leaves of the tree are the spans by lo; a live span's leaf holds its hi and
	// item, and each node the largest hi below it with its item and the largest hi of any
	// other item. A span meets a live one of another item exactly when, among the live
	// spans starting below its hi, one of another item ends above its lo.
	byLo := make([]int32, len(spans))
	for i := range byLo {
		byLo[i] = int32(i)
	}
	slices.SortFunc(byLo, func(a, b int32) int { return cmp.Compare(spans[a].lo, spans[b].lo) })
	los := make([]int64, len(spans))
	leaf := make([]int32, len(spans))
	for k, i := range byLo {
		los[k] = spans[i].lo
		leaf[i] = int32(k)
	}
	tree := newTop2Tree(len(spans))
	live := make([]bool, len(spans))
	ends := minheap.New(func(i, j int32) bool { return spans[i].end < spans[j].end }) // span indices by end
	for i, r := range spans {
		for ends.Len() > 0 && spans[ends.Min()].end <= r.start {
			j := ends.Pop()
			live[j] = false
			tree.set(int(leaf[j]), noSpans)
		}
		below, _ := slices.BinarySearch(los, r.hi)
		t := tree.prefix(below)
		reach := t.hi1
		if t.item1 == r.item {
			reach = t.hi2
		}
		if reach > r.lo {
			// Name the first live span in start order that r meets.
			for j := range i {
				if live[j] && spans[j].item != r.item {
					if err := clash(spans[j], r); err != nil {
						return 0, err
					}
				}
			}
		}
		live[i] = true
		ends.Push(int32(i))
		tree.set(int(leaf[i]), top2{hi1: r.hi, item1: r.item, hi2: noHi})
	}
	at := func(pr PieceRef) placedSpan {
		pc := p.Items[pr.Item].Pieces[pr.Piece]
		off := offsets[pr.Item]
		return placedSpan{off + pc.Lo, off + pc.Hi, pc.Start, pc.End, pr.Item}
	}
	for _, pp := range p.Concurrent {
		if err := clash(at(pp.A), at(pp.B)); err != nil {
			return 0, fmt.Errorf("concurrent pieces: %w", err)
		}
	}
	return height, nil
}

// placedSpan is a piece placed at its item's offset.
type placedSpan struct {
	lo, hi     int64
	start, end Time
	item       int
}

// noHi stands for no span.
const noHi = math.MinInt64

// top2 is the largest hi among some spans with its item, and the largest hi among those
// of any other item.
type top2 struct {
	hi1   int64
	item1 int
	hi2   int64
}

var noSpans = top2{hi1: noHi, item1: -1, hi2: noHi}

func mergeTop2(a, b top2) top2 {
	if b.hi1 > a.hi1 {
		a, b = b, a
	}
	out := a
	if b.item1 != a.item1 {
		out.hi2 = max(out.hi2, b.hi1)
	} else {
		out.hi2 = max(out.hi2, b.hi2)
	}
	return out
}

// top2Tree is a segment tree of top2 over leaf positions.
type top2Tree struct {
	size int
	node []top2
}

func newTop2Tree(n int) *top2Tree {
	size := 1
	for size < n {
		size <<= 1
	}
	t := &top2Tree{size: size, node: make([]top2, 2*size)}
	for i := range t.node {
		t.node[i] = noSpans
	}
	return t
}

func (t *top2Tree) set(i int, x top2) {
	v := i + t.size
	t.node[v] = x
	for v >>= 1; v >= 1; v >>= 1 {
		t.node[v] = mergeTop2(t.node[2*v], t.node[2*v+1])
	}
}

// prefix folds leaves [0, n).
func (t *top2Tree) prefix(n int) top2 {
	out := noSpans
	for l, h := t.size, n+t.size; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			out = mergeTop2(out, t.node[l])
			l++
		}
		if h&1 == 1 {
			h--
			out = mergeTop2(out, t.node[h])
		}
	}
	return out
}
