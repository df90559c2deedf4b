package trace

import (
	"cmp"
	"math"
	"slices"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace/internal/sweep"
)

// When each byte is let go. docs/TRACE.md's safety rule orders two buffers that share a
// byte by which of them lets the byte go first: a buffer lets a byte go at the first
// discard of one of its views that covers the byte, or else at its release, or never
// when it is held to the end of the trace. LetGo is that rule; the checker (package
// trace/check), the replay (package trace/replay) and the planner (package trace/plan)
// take it from here.

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
	final := Never
	if buf.Release >= 0 {
		final = buf.Release
	}
	return cut(buf.Size, off, len(buf.Discards), func(i int) (ranges.Set, int) {
		v := buf.Discards[i]
		fp, _ := p.Footprint(Ref{Buffer: b, View: v})
		return fp, p.Views[v].Discard
	}, final)
}

// LetGoGroup is LetGo for a group of buffers that share the bytes of one, taken as one
// buffer: group[0] is the host, whose bytes the group covers, and the others are laid
// over it (a plan's placements, the planner's in-place outputs laid over a strided
// input). No release orders the buffers of a group, so each discard of a view of any of
// them, in step order, takes the bytes of its view that no earlier discard took, and the
// bytes left go at the last release of the group, or never (Never) when any of them is
// held to the end. bytes(ref) gives the bytes of a view (or a whole buffer) of the group
// in the host's coordinates, relative to its first byte; LetGoGroup does not modify the
// set. Pieces are shifted by off and come in LetGo's order; for a group of one buffer,
// with bytes giving Footprint, LetGoGroup is LetGo.
func (p *Program) LetGoGroup(group []int, off int64, bytes func(Ref) ranges.Set) []Piece {
	type discard struct {
		step int
		ref  Ref
	}
	var ds []discard
	final := p.Buffers[group[0]].Release
	for _, b := range group {
		for _, v := range p.Buffers[b].Discards {
			ds = append(ds, discard{p.Views[v].Discard, Ref{Buffer: b, View: v}})
		}
		if rel := p.Buffers[b].Release; rel < 0 || final < 0 {
			final = -1
		} else {
			final = max(final, rel)
		}
	}
	slices.SortFunc(ds, func(a, b discard) int { return a.step - b.step })
	if final < 0 {
		final = Never
	}
	return cut(p.Buffers[group[0]].Size, off, len(ds), func(i int) (ranges.Set, int) {
		return bytes(ds[i].ref), ds[i].step
	}, final)
}

// cut partitions [0, size) by n discards, taken in order (discard(i) gives the i-th one's
// bytes, which cut does not modify, and its step): each takes the bytes no earlier one
// took, and the bytes left go at final. The pieces are shifted by off.
func cut(size, off int64, n int, discard func(i int) (ranges.Set, int), final int) []Piece {
	if n > paintAbove {
		sets := make([]ranges.Set, n)
		steps := make([]int, n)
		for i := range n {
			sets[i], steps[i] = discard(i)
		}
		taken, rest := paint(0, size, sets)
		out := piecesOf(taken, steps, rest, final)
		for i := range out {
			_ = out[i].Bytes.Translate(off)
		}
		return out
	}
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: size})
	var out []Piece
	for i := range n {
		set, step := discard(i)
		got := ranges.Intersect(&rest, &set)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		_ = got.Translate(off)
		out = append(out, Piece{Bytes: got, Step: step})
	}
	if !rest.IsEmpty() {
		_ = rest.Translate(off)
		out = append(out, Piece{Bytes: rest, Step: final})
	}
	return out
}

// paintAbove is the number of discards up to which pieces are cut one discard after the
// other (each cut costs the runs left so far); above it, paint cuts them all in one sweep.
const paintAbove = 8

// piecesOf lists the non-empty sets of taken as pieces let go at steps, then rest let go
// at final.
func piecesOf(taken []ranges.Set, steps []int, rest ranges.Set, final int) []Piece {
	var out []Piece
	for i := range taken {
		if !taken[i].IsEmpty() {
			out = append(out, Piece{Bytes: taken[i], Step: steps[i]})
		}
	}
	if !rest.IsEmpty() {
		out = append(out, Piece{Bytes: rest, Step: final})
	}
	return out
}

// paint partitions [lo, hi) by the first of sets covering each byte: taken[i] holds the
// bytes of [lo, hi) that sets[i] covers and no earlier set does; rest holds the bytes none
// covers. It is the loop "take each set's bytes not taken before" in O(R log R) for R
// runs in all.
func paint(lo, hi int64, sets []ranges.Set) (taken []ranges.Set, rest ranges.Set) {
	type edge struct {
		x   int64
		set int
		in  bool
	}
	var edges []edge
	for i := range sets {
		for _, r := range sets[i].Runs() {
			r = r.Intersect(ranges.Range{Lo: lo, Hi: hi})
			if !r.Empty() {
				edges = append(edges, edge{r.Lo, i, true}, edge{r.Hi, i, false})
			}
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.x, b.x) })
	runs := make([][]ranges.Range, len(sets)+1) // the last: rest
	add := func(owner int, r ranges.Range) {
		if r.Empty() {
			return
		}
		rs := runs[owner]
		if n := len(rs); n > 0 && rs[n-1].Hi == r.Lo {
			rs[n-1].Hi = r.Hi
		} else {
			rs = append(rs, r)
		}
		runs[owner] = rs
	}
	active := make([]bool, len(sets))
	h := sweep.NewHeap(func(a, b int) bool { return a < b })
	x := lo
	for i := 0; i < len(edges); {
		at := edges[i].x
		owner := len(sets)
		for h.Len() > 0 && !active[h.Min()] {
			h.Pop()
		}
		if h.Len() > 0 {
			owner = h.Min()
		}
		add(owner, ranges.Range{Lo: x, Hi: at})
		x = at
		for ; i < len(edges) && edges[i].x == at; i++ {
			e := edges[i]
			active[e.set] = e.in
			if e.in {
				h.Push(e.set)
			}
		}
	}
	add(len(sets), ranges.Range{Lo: x, Hi: hi})
	taken = make([]ranges.Set, len(sets))
	for i := range sets {
		taken[i] = ranges.FromRanges(runs[i]...)
	}
	return taken, ranges.FromRanges(runs[len(sets)]...)
}
