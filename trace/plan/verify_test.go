package plan

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPlacementPrimitives checks the pieces Verify and its reference share: the offset
// checks of placementHeight, the placed pieces and their order from sweepSpans and
// placedPiece, and clashError's verdict and message.
func TestPlacementPrimitives(t *testing.T) {
	p := &Problem{Align: 4, Items: []Item{
		{Name: "a", Size: 8, Pieces: []Piece{{Lo: 0, Hi: 8, Start: 3, End: 5}, {Lo: 4, Hi: 8, Start: 0, End: 2}}},
		{Name: "b", Size: 4, Pieces: []Piece{{Lo: 0, Hi: 4, Start: 1, End: 4}}},
	}}
	for _, tc := range []struct {
		name    string
		p       *Problem
		offsets []int64
		height  int64
		want    error
	}{
		{"valid", p, []int64{0, 8}, 12, nil},
		{"valid overlapping", p, []int64{4, 0}, 12, nil},
		{"invalid problem", &Problem{Align: 3}, nil, 0, ErrInvalidProblem},
		{"too few offsets", p, []int64{0}, 0, ErrInvalidProblem},
		{"negative", p, []int64{0, -4}, 0, ErrConflict},
		{"unaligned", p, []int64{2, 8}, 0, ErrConflict},
		{"too large", p, []int64{0, maxSize + 1}, 0, ErrConflict},
	} {
		h, err := placementHeight(tc.p, tc.offsets)
		if h != tc.height || !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: placementHeight %d, %v; want %d, %v", tc.name, h, err, tc.height, tc.want)
		}
	}

	rng := rand.New(rand.NewPCG(43, 44))
	for iter := range 200 {
		q := randPieces(rng, 1+rng.IntN(8), false)
		off := make([]int64, len(q.Items))
		for i := range off {
			off[i] = rng.Int64N(32)
		}
		spans := sweepSpans(q, off)
		seen := map[placedSpan]int{}
		n := 0
		for i, it := range q.Items {
			for k, pc := range it.Pieces {
				s := placedPiece(q, off, PieceRef{Item: i, Piece: k})
				if s != (placedSpan{off[i] + pc.Lo, off[i] + pc.Hi, pc.Start, pc.End, i}) {
					t.Fatalf("iter %d: item %d piece %d placed as %+v", iter, i, k, s)
				}
				seen[s]++
				n++
			}
		}
		if len(spans) != n {
			t.Fatalf("iter %d: %d spans for %d pieces", iter, len(spans), n)
		}
		for k, s := range spans {
			if seen[s]--; seen[s] < 0 {
				t.Fatalf("iter %d: span %+v is no piece placed, or is one twice", iter, s)
			}
			if k > 0 && spans[k-1].start > s.start {
				t.Fatalf("iter %d: spans %d and %d out of start order", iter, k-1, k)
			}
		}
	}

	a := placedSpan{lo: 4, hi: 12, start: 1, end: 3, item: 0}
	for _, tc := range []struct {
		b    placedSpan
		want string // "" for no clash
	}{
		{placedSpan{lo: 12, hi: 16, start: 0, end: 9, item: 1}, ""},
		{placedSpan{lo: 0, hi: 4, start: 0, end: 9, item: 1}, ""},
		{placedSpan{lo: 8, hi: 16, start: 2, end: 6, item: 1},
			`items "a" and "b" share bytes [8, 12) during times [1, 3) and [2, 6)`},
		{placedSpan{lo: 0, hi: 5, start: 7, end: 8, item: 1},
			`items "a" and "b" share bytes [4, 5) during times [1, 3) and [7, 8)`},
	} {
		err := clashError(p, a, tc.b)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want no clash", tc.b, err)
		case tc.want != "" && (!errors.Is(err, ErrConflict) || !strings.HasPrefix(err.Error(), tc.want+":")):
			t.Errorf("%+v: %v, want %s matching ErrConflict", tc.b, err, tc.want)
		}
	}
}

// TestTop2TreePrefix compares every prefix fold of a top2Tree with a fold of its leaves
// one by one, as leaves are set and cleared at random.
func TestTop2TreePrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 33} {
		tree := newTop2Tree(n)
		leaves := make([]top2, n)
		for i := range leaves {
			leaves[i] = noSpans
		}
		for range 4 * n {
			i := rng.IntN(n)
			leaves[i] = noSpans
			if rng.IntN(3) > 0 {
				leaves[i] = top2{hi1: rng.Int64N(20), item1: rng.IntN(4), hi2: noHi}
			}
			tree.set(i, leaves[i])
			for k := range n + 1 {
				// The reach of a span of each item: the largest hi of another item's leaf.
				got := tree.prefix(k)
				for item := range 4 {
					want := int64(noHi)
					for _, l := range leaves[:k] {
						if l.item1 != item {
							want = max(want, l.hi1)
						}
					}
					reach := got.hi1
					if got.item1 == item {
						reach = got.hi2
					}
					if reach != want {
						t.Fatalf("n %d prefix %d item %d: reach %d, want %d (leaves %v)", n, k, item, reach, want, leaves)
					}
				}
			}
		}
	}
}
