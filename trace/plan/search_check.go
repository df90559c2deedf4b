package plan

import (
	"fmt"
	"slices"
)

// CheckInvariants verifies the searcher's state against its definition by
// recomputing it from scratch. Tests call it after every step.
func (s *searcher) CheckInvariants() error {
	c := s.c
	total := make([]int64, c.nsec)
	cuts := make([]int32, len(s.cuts))
	for i := range c.n {
		off := s.offset[i]
		if off >= 0 {
			if off%c.align != 0 || off+c.size[i] > s.capacity {
				return fmt.Errorf("item %d at %d: unaligned or over capacity %d: %w", i, off, s.capacity, ErrConflict)
			}
			for _, e := range c.edges[i] {
				if b := s.offset[e.other]; b >= 0 && forbidden(e.rels, off-b) {
					return fmt.Errorf("placed items %d at %d and %d at %d conflict: %w", i, off, e.other, b, ErrConflict)
				}
			}
			continue
		}
		if s.minOff[i]%c.align != 0 || s.minOff[i] < 0 {
			return fmt.Errorf("item %d: min offset %d unaligned: %w", i, s.minOff[i], ErrConflict)
		}
		for _, e := range c.edges[i] {
			if b := s.offset[e.other]; b >= 0 && forbidden(e.rels, s.minOff[i]-b) {
				return fmt.Errorf("item %d: min offset %d forbidden by item %d at %d: %w", i, s.minOff[i], e.other, b, ErrConflict)
			}
		}
		for _, sp := range c.spans[i] {
			for k := sp.s0; k < sp.s1; k++ {
				total[k] += sp.bytes
			}
		}
		e := c.cutExtent[i]
		for k := e[0]; k+1 < e[1]; k++ {
			cuts[k]++
		}
	}
	if !slices.Equal(total, s.total) {
		return fmt.Errorf("section totals %v, want %v: %w", s.total, total, ErrConflict)
	}
	// Cuts are only decremented below a placement that recursed, so during
	// place/undo they may exceed the recount by the items being descended.
	for k := range cuts {
		if s.cuts[k] < cuts[k] {
			return fmt.Errorf("section %d: cuts %d below unplaced spanning count %d: %w", k, s.cuts[k], cuts[k], ErrConflict)
		}
	}
	return nil
}
