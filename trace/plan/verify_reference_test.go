package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// refVerify is Verify by brute force (refConflict) once the placement's form passes
// placementHeight, which it shares with Verify.
func refVerify(p *Problem, offsets []int64) (int64, error) {
	height, err := placementHeight(p, offsets)
	if err == nil {
		err = refConflict(p, offsets)
	}
	if err != nil {
		return 0, err
	}
	return height, nil
}

// refConflict checks each piece, in sweep order, against every earlier piece of another
// item still live at its start, then the concurrent pairs, and returns the first
// conflict. Beyond placementHeight it shares with Verify only the sweep order
// (sweepSpans, which fixes which conflict is named first), the placed pieces
// (placedPiece) and the conflict's message (clashError), which TestPlacementPrimitives
// checks on their own; finding the conflict is its own.
func refConflict(p *Problem, offsets []int64) error {
	spans := sweepSpans(p, offsets)
	for i, r := range spans {
		for _, s := range spans[:i] {
			if s.item == r.item || s.end <= r.start {
				continue
			}
			if err := clashError(p, s, r); err != nil {
				return err
			}
		}
	}
	for _, pp := range p.Concurrent {
		a, b := placedPiece(p, offsets, pp.A), placedPiece(p, offsets, pp.B)
		if err := clashError(p, a, b); err != nil {
			return fmt.Errorf("concurrent pieces: %w", err)
		}
	}
	return nil
}

// TestVerifyMatchesReference: Verify gives the brute-force answer, error text included,
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
