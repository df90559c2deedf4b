package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// Verify checks a placement of a valid problem: one offset per item, each
// non-negative and aligned, and no two conflicting pieces sharing a byte.
// It returns the placement's height, the largest offset+size, or an error
// matching ErrConflict (or ErrInvalidProblem for a malformed problem or a
// wrong number of offsets). It works on the problem as given, not on the
// solver's compiled form, so it also guards the solver.
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
