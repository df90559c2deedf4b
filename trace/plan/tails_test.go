package plan

import "testing"

// TestShortenTails: a tail lists exactly the pieces that start in it and
// are let go no later than it; beyond maxTailPairs the window is lengthened
// to the death instead.
func TestShortenTails(t *testing.T) {
	for _, n := range []int{5, 2*maxTailPairs - 1, 2*maxTailPairs + 1} {
		// Item 0: one piece used over [0, 2), let go at 1000. Items 1..n:
		// pieces starting inside the tail, without tails of their own; the
		// even ones let go before 1000, the odd ones after.
		pieces := []Piece{{Lo: 0, Hi: 8, Start: 0, End: 2}}
		deaths := []Time{1000, 1000}
		pieceAt := []int{0, 1}
		want := 0
		for i := range n {
			d := Time(4 + i)
			if i%2 == 1 {
				d = 1500
			} else {
				want++
			}
			pieces = append(pieces, Piece{Lo: 0, Hi: 8, Start: 3 + i, End: d})
			deaths = append(deaths, d, d)
			pieceAt = append(pieceAt, len(pieces))
		}
		// One more starting after the death: never listed.
		pieces = append(pieces, Piece{Lo: 0, Hi: 8, Start: 1000, End: 1001})
		deaths = append(deaths, 1001, 1001)
		pieceAt = append(pieceAt, len(pieces))
		pieces, pieceAt, pairs := shortenTails(pieces, deaths, pieceAt)
		if want > maxTailPairs {
			if len(pairs) != 0 || pieces[0].End != 1000 {
				t.Errorf("n %d: %d pairs, window end %d; want the window lengthened", n, len(pairs), pieces[0].End)
			}
			continue
		}
		if len(pairs) != want || pieces[0].End != 2 {
			t.Errorf("n %d: %d pairs (want %d), window end %d", n, len(pairs), want, pieces[0].End)
		}
		for _, pp := range pairs {
			q := pp.B.Item
			if pp.A.Item != 0 || deaths[2*pieceAt[q]+1] > 1000 {
				t.Errorf("n %d: listed %+v", n, pp)
			}
		}
	}
}
