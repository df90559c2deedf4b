package trace

import (
	"math"

	"github.com/subarena/subarena/ranges"
)

// When each byte is let go. docs/TRACE.md's safety rule orders two buffers that share a
// byte by which of them lets the byte go first: a buffer lets a byte go at the first
// discard of one of its views that covers the byte, or else at its release, or never
// when it is held to the end of the trace. LetGo is that rule; Check, LiveLowerBound,
// the replay (package trace/replay) and the planner (package trace/plan) take it from
// here.

// Never is Piece.Step for bytes held to the end of the trace.
const Never = math.MaxInt

// Piece is a part of a buffer's bytes that one step lets go.
type Piece struct {
	// Bytes are the piece's bytes, in the coordinates LetGo was asked for.
	Bytes ranges.Set
	// Step is the index of the release or discard step that lets them go, or Never.
	Step int
}

// LetGo partitions the bytes of buffer b, shifted by off (its offset in an arena, or 0
// for buffer-relative bytes), by the step that lets them go: each discard of a view of b,
// in step order, takes the bytes of its view that no earlier discard took, and the bytes
// left go at b's release, or never (Never) when b is held to the end. The pieces come in
// that order, empty ones left out, and cover b's bytes exactly once. It costs
// O(R log R) for the R runs of b's discarded views.
func (p *Program) LetGo(b int, off int64) []Piece {
	buf := &p.Buffers[b]
	death := Never
	if buf.Release >= 0 {
		death = buf.Release
	}
	if len(buf.Discards) > paintAbove {
		sets := make([]ranges.Set, len(buf.Discards))
		deaths := make([]int, len(buf.Discards))
		for i, v := range buf.Discards {
			sets[i], _ = p.Footprint(Ref{Buffer: b, View: v})
			deaths[i] = p.Views[v].Discard
		}
		taken, rest := paint(0, buf.Size, sets)
		out := piecesOf(taken, deaths, rest, death)
		for i := range out {
			_ = out[i].Bytes.Translate(off)
		}
		return out
	}
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
	var out []Piece
	for _, v := range buf.Discards {
		fp, _ := p.Footprint(Ref{Buffer: b, View: v})
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		_ = got.Translate(off)
		out = append(out, Piece{Bytes: got, Step: p.Views[v].Discard})
	}
	if !rest.IsEmpty() {
		_ = rest.Translate(off)
		out = append(out, Piece{Bytes: rest, Step: death})
	}
	return out
}

// paintAbove is the number of discards up to which pieces are cut one discard after the
// other (each cut costs the runs left so far); above it, paint cuts them all in one sweep.
const paintAbove = 8

// piecesOf lists the non-empty sets of taken as pieces dying at deaths, then rest dying
// at death.
func piecesOf(taken []ranges.Set, deaths []int, rest ranges.Set, death int) []Piece {
	var out []Piece
	for i := range taken {
		if !taken[i].IsEmpty() {
			out = append(out, Piece{Bytes: taken[i], Step: deaths[i]})
		}
	}
	if !rest.IsEmpty() {
		out = append(out, Piece{Bytes: rest, Step: death})
	}
	return out
}
