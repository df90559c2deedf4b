package plan

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// refVerify is Verify as it was: each piece against every live one.
func refVerify(p *Problem, offsets []int64) (int64, error) {
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
	// Sweep the pieces by start time, placed at their items' offsets,
	// against those still active.
	type span struct {
		lo, hi     int64
		start, end Time
		item       int
	}
	n := 0
	for _, it := range p.Items {
		n += len(it.Pieces)
	}
	spans := make([]span, 0, n)
	for i, it := range p.Items {
		for _, pc := range it.Pieces {
			spans = append(spans, span{offsets[i] + pc.Lo, offsets[i] + pc.Hi, pc.Start, pc.End, i})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	clash := func(a, b span) error {
		if a.lo < b.hi && b.lo < a.hi {
			return fmt.Errorf("items %q and %q share bytes [%d, %d) during times [%d, %d) and [%d, %d): %w",
				p.Items[a.item].Name, p.Items[b.item].Name, max(a.lo, b.lo), min(a.hi, b.hi),
				a.start, a.end, b.start, b.end, ErrConflict)
		}
		return nil
	}
	active := make([]span, 0, 64)
	for _, r := range spans {
		keep := active[:0]
		for _, s := range active {
			if s.end > r.start {
				keep = append(keep, s)
			}
		}
		active = keep
		for _, s := range active {
			if s.item == r.item {
				continue
			}
			if err := clash(s, r); err != nil {
				return 0, err
			}
		}
		active = append(active, r)
	}
	at := func(pr PieceRef) span {
		pc := p.Items[pr.Item].Pieces[pr.Piece]
		off := offsets[pr.Item]
		return span{off + pc.Lo, off + pc.Hi, pc.Start, pc.End, pr.Item}
	}
	for _, pp := range p.Concurrent {
		if err := clash(at(pp.A), at(pp.B)); err != nil {
			return 0, fmt.Errorf("concurrent pieces: %w", err)
		}
	}
	return height, nil
}

// TestVerifyMatchesReference: Verify gives the old sweep's answer, error text included,
// on random problems (pieces of one item may overlap in bytes and time) and placements.
func TestVerifyMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	bad := 0
	for iter := range 5000 {
		p := randPieces(rng, 1+rng.IntN(8), iter%2 == 0)
		if iter%3 == 0 {
			// Pieces of one item over the same bytes.
			for i := range p.Items {
				it := &p.Items[i]
				if len(it.Pieces) > 0 && rng.IntN(2) == 0 {
					pc := it.Pieces[rng.IntN(len(it.Pieces))]
					pc.Start = rng.IntN(6)
					pc.End = pc.Start + 1 + rng.IntN(3)
					it.Pieces = append(it.Pieces, pc)
				}
			}
		}
		off := make([]int64, len(p.Items))
		a := p.align()
		for i := range off {
			off[i] = a * rng.Int64N(16/a+1)
		}
		h, err := Verify(p, off)
		wh, werr := refVerify(p, off)
		if h != wh || (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("iter %d: Verify %d, %v; reference %d, %v", iter, h, err, wh, werr)
		}
		if err != nil {
			bad++
		}
	}
	if bad < 500 || bad > 4500 {
		t.Fatalf("degenerate test: %d of 5000 placements invalid", bad)
	}
}
