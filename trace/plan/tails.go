package plan

import "slices"

// Tails. A byte whose last use comes before the step that lets it go (its
// buffer's release or a discard covering it) is dead but still held: its
// tail. The checker lets a buffer B take such a byte over from its holder A
// when every use of the byte through A comes before every use through B and
// A lets it go first. The second condition fails only when some buffer of
// B's item lets the bytes go no later than some buffer of A's item (an item
// is an in-place group; a dense group's buffers keep their own releases).
// On one engine, derive therefore ends each piece's window at its last use
// and lists as Concurrent (never sharing) each pair of pieces k, q whose
// windows are disjoint, q starting after k's window and before k's death,
// unless every buffer covering q's bytes lets them go after every buffer
// covering k's; every other pair with disjoint windows is safe. A piece
// whose tail would need more than maxTailPairs such pairs keeps its window
// to its death instead, as without this rule; bytes held to the end keep
// their window to the end (nothing after them may take them).

// maxTailPairs bounds the conflict pairs one piece's tail may add.
const maxTailPairs = 64

// shortenTails takes pieces (item i's pieces are pieces[pieceAt[i]:
// pieceAt[i+1]]) with windows ending at their last use, and deaths[2k],
// deaths[2k+1] the times the last and the first buffer covering piece k's
// bytes let them go; it lengthens the windows whose tails are not worth
// listing back to their death and returns the pairs to list.
func shortenTails(pieces []Piece, deaths []Time, pieceAt []int) []PiecePair {
	itemOf := make([]int, len(pieces))
	for i := 0; i+1 < len(pieceAt); i++ {
		for k := pieceAt[i]; k < pieceAt[i+1]; k++ {
			itemOf[k] = i
		}
	}
	byStart := make([]int, len(pieces))
	for k := range byStart {
		byStart[k] = k
	}
	slices.SortFunc(byStart, func(a, b int) int { return pieces[a].Start - pieces[b].Start })
	tailPairs := func(k int) ([]int, bool) {
		var out []int
		pk := pieces[k]
		// Pieces starting at or after k's window end and before its death;
		// those a buffer lets go no later than k's last (a tie in time may
		// still be the wrong order) may not share.
		i, _ := slices.BinarySearchFunc(byStart, pk.End, func(x int, t Time) int { return pieces[x].Start - t })
		for ; i < len(byStart); i++ {
			q := byStart[i]
			if pieces[q].Start >= deaths[2*k] {
				break // starts after k is let go
			}
			if itemOf[q] == itemOf[k] || deaths[2*q+1] > deaths[2*k] {
				continue
			}
			if len(out) == maxTailPairs {
				return nil, false
			}
			out = append(out, q)
		}
		return out, true
	}
	var pairs []PiecePair
	ref := func(k int) PieceRef { return PieceRef{Item: itemOf[k], Piece: k - pieceAt[itemOf[k]]} }
	for k := range pieces {
		if deaths[2*k] <= pieces[k].End {
			continue // no tail
		}
		qs, ok := tailPairs(k)
		if !ok {
			pieces[k].End = deaths[2*k] // too many: keep the window to the death
			continue
		}
		for _, q := range qs {
			pairs = append(pairs, PiecePair{A: ref(k), B: ref(q)})
		}
	}
	return pairs
}
