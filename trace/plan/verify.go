package plan

import (
	"fmt"
	"sort"
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
	type ref struct{ item, piece int }
	var all []ref
	for i, it := range p.Items {
		for k := range it.Pieces {
			all = append(all, ref{i, k})
		}
	}
	pc := func(r ref) Piece { return p.Items[r.item].Pieces[r.piece] }
	sort.Slice(all, func(x, y int) bool { return pc(all[x]).Start < pc(all[y]).Start })
	clash := func(r, s ref) error {
		a, b := pc(r), pc(s)
		alo, ahi := offsets[r.item]+a.Lo, offsets[r.item]+a.Hi
		blo, bhi := offsets[s.item]+b.Lo, offsets[s.item]+b.Hi
		if alo < bhi && blo < ahi {
			return fmt.Errorf("items %q and %q share bytes [%d, %d) during times [%d, %d) and [%d, %d): %w",
				p.Items[r.item].Name, p.Items[s.item].Name, max(alo, blo), min(ahi, bhi),
				a.Start, a.End, b.Start, b.End, ErrConflict)
		}
		return nil
	}
	var active []ref
	for _, r := range all {
		keep := active[:0]
		for _, s := range active {
			if pc(s).End > pc(r).Start {
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
	for _, pp := range p.Concurrent {
		if err := clash(ref{pp.A.Item, pp.A.Piece}, ref{pp.B.Item, pp.B.Piece}); err != nil {
			return 0, fmt.Errorf("concurrent pieces: %w", err)
		}
	}
	return height, nil
}
