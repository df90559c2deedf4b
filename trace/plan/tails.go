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
// pieceAt[i+1]], in byte order) with windows ending at their last use, and
// deaths[2k], deaths[2k+1] the times the last and the first buffer
// covering piece k's bytes let them go. It lengthens back to their death
// the windows whose tails no other item's piece starts in (that changes no
// conflict) and those whose tails are not worth listing, merges the pieces
// that then match their neighbours, and returns the pieces, their pieceAt
// and the pairs to list.
func shortenTails(pieces []Piece, deaths []Time, pieceAt []int) ([]Piece, []int, []PiecePair) {
	itemOf := make([]int, len(pieces))
	for i := 0; i+1 < len(pieceAt); i++ {
		for k := pieceAt[i]; k < pieceAt[i+1]; k++ {
			itemOf[k] = i
		}
	}
	byStart := make([]int, len(pieces))
	starts := make([]Time, len(pieces)) // starts[i]: the start of piece byStart[i]
	sortByStart := func() {
		byStart, starts = byStart[:len(pieces)], starts[:len(pieces)]
		for k := range byStart {
			byStart[k] = k
		}
		slices.SortFunc(byStart, func(a, b int) int { return pieces[a].Start - pieces[b].Start })
		for i, k := range byStart {
			starts[i] = pieces[k].Start
		}
	}
	// inTail calls fn with each piece of another item starting in k's tail,
	// until fn returns false.
	inTail := func(k int, fn func(q int) bool) {
		i, _ := slices.BinarySearch(starts, pieces[k].End)
		for ; i < len(byStart) && starts[i] < deaths[2*k]; i++ {
			if q := byStart[i]; itemOf[q] != itemOf[k] && !fn(q) {
				return
			}
		}
	}
	sortByStart()
	// A tail's answer depends only on its item and its times: the last few
	// asked are kept (the strided rows of a fused projection alternate
	// between a few tails).
	type tailAnswer struct {
		item       int
		end, death Time
		some       bool
	}
	var seen [4]tailAnswer
	for i := range seen {
		seen[i].item = -1
	}
	for k := range pieces {
		if deaths[2*k] <= pieces[k].End {
			continue
		}
		x := tailAnswer{item: itemOf[k], end: pieces[k].End, death: deaths[2*k]}
		found := false
		for _, s := range seen {
			if s.item == x.item && s.end == x.end && s.death == x.death {
				x.some, found = s.some, true
				break
			}
		}
		if !found {
			inTail(k, func(int) bool { x.some = true; return false })
			copy(seen[1:], seen[:len(seen)-1])
			seen[0] = x
		}
		if !x.some {
			pieces[k].End = deaths[2*k]
		}
	}
	// Merge neighbours with one window and one death.
	out, outDeaths, outAt := pieces[:0], deaths[:0], make([]int, 0, len(pieceAt))
	outItem := itemOf[:0]
	for i := 0; i+1 < len(pieceAt); i++ {
		outAt = append(outAt, len(out))
		first := len(out)
		for k := pieceAt[i]; k < pieceAt[i+1]; k++ {
			pc, d0, d1 := pieces[k], deaths[2*k], deaths[2*k+1]
			if m := len(out); m > first {
				prev := &out[m-1]
				if prev.Hi == pc.Lo && prev.Start == pc.Start && prev.End == pc.End &&
					outDeaths[2*m-2] == d0 && outDeaths[2*m-1] == d1 {
					prev.Hi = pc.Hi
					continue
				}
			}
			out = append(out, pc)
			outDeaths = append(outDeaths, d0, d1)
			outItem = append(outItem, i)
		}
	}
	outAt = append(outAt, len(out))
	pieces, deaths, pieceAt, itemOf = out, outDeaths, outAt, outItem
	sortByStart()
	var pairs, qs []PiecePair
	ref := func(k int) PieceRef { return PieceRef{Item: itemOf[k], Piece: k - pieceAt[itemOf[k]]} }
	for k := range pieces {
		if deaths[2*k] <= pieces[k].End {
			continue // no tail
		}
		// Pieces starting in k's tail that a buffer lets go no later than
		// k's last (a tie in time may still be the wrong order) may not
		// share with k.
		qs = qs[:0]
		ok := true
		inTail(k, func(q int) bool {
			if deaths[2*q+1] > deaths[2*k] {
				return true
			}
			if len(qs) == maxTailPairs {
				ok = false
				return false
			}
			qs = append(qs, PiecePair{A: ref(k), B: ref(q)})
			return true
		})
		if !ok {
			pieces[k].End = deaths[2*k] // too many: keep the window to the death
			continue
		}
		pairs = append(pairs, qs...)
	}
	return pieces, pieceAt, pairs
}
