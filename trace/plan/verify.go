package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/subarena/subarena/trace/internal/sweep"
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
	height, err := placementHeight(p, offsets)
	if err != nil {
		return 0, err
	}
	spans := sweepSpans(p, offsets)
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
	ends := sweep.NewHeap(func(i, j int32) bool { return spans[i].end < spans[j].end }) // span indices by end
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
					if err := clashError(p, spans[j], r); err != nil {
						return 0, err
					}
				}
			}
		}
		live[i] = true
		ends.Push(int32(i))
		tree.set(int(leaf[i]), top2{hi1: r.hi, item1: r.item, hi2: noHi})
	}
	for _, pp := range p.Concurrent {
		if err := clashError(p, placedPiece(p, offsets, pp.A), placedPiece(p, offsets, pp.B)); err != nil {
			return 0, fmt.Errorf("concurrent pieces: %w", err)
		}
	}
	return height, nil
}

// placementHeight checks the form of a placement of p: p valid, one offset per item,
// each non-negative, aligned and at most maxSize. It returns the placement's height, the
// largest offset+size, or the error Verify returns for the first fault.
func placementHeight(p *Problem, offsets []int64) (int64, error) {
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
	return height, nil
}

// sweepSpans returns every piece of p placed at its item's offset, in the order Verify
// sweeps them: by start time.
func sweepSpans(p *Problem, offsets []int64) []placedSpan {
	n := 0
	for _, it := range p.Items {
		n += len(it.Pieces)
	}
	spans := make([]placedSpan, 0, n)
	for i, it := range p.Items {
		for k := range it.Pieces {
			spans = append(spans, placedPiece(p, offsets, PieceRef{Item: i, Piece: k}))
		}
	}
	slices.SortFunc(spans, func(a, b placedSpan) int { return cmp.Compare(a.start, b.start) })
	return spans
}

// placedPiece returns piece pr of p placed at its item's offset.
func placedPiece(p *Problem, offsets []int64, pr PieceRef) placedSpan {
	pc := p.Items[pr.Item].Pieces[pr.Piece]
	off := offsets[pr.Item]
	return placedSpan{off + pc.Lo, off + pc.Hi, pc.Start, pc.End, pr.Item}
}

// clashError returns an error matching ErrConflict that names the items of a and b and
// the bytes they share if a and b share a byte, else nil. It does not look at times:
// the caller passes spans live together.
func clashError(p *Problem, a, b placedSpan) error {
	if a.lo < b.hi && b.lo < a.hi {
		return fmt.Errorf("items %q and %q share bytes [%d, %d) during times [%d, %d) and [%d, %d): %w",
			p.Items[a.item].Name, p.Items[b.item].Name, max(a.lo, b.lo), min(a.hi, b.hi),
			a.start, a.end, b.start, b.end, ErrConflict)
	}
	return nil
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

// prefix folds leaves [0, n): the left siblings of the nodes on the path from leaf n
// to the root, or the root when n is past the last leaf.
func (t *top2Tree) prefix(n int) top2 {
	if n >= t.size {
		return t.node[1]
	}
	out := noSpans
	for v := n + t.size; v > 1; v >>= 1 {
		if v&1 == 1 {
			out = mergeTop2(out, t.node[v-1])
		}
	}
	return out
}
