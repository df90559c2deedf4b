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

// CheckInvariants verifies the compiled form: edges symmetric with negated
// intervals, intervals sorted and disjoint, spans inside the sections and
// the item's extent, and every section listing exactly the items live in it.
func (c *compiled) CheckInvariants() error {
	for i := range c.n {
		for _, e := range c.edges[i] {
			if e.other == int32(i) || len(e.rels) == 0 {
				return fmt.Errorf("item %d: bad edge to %d: %w", i, e.other, ErrInvalidProblem)
			}
			for k := 1; k < len(e.rels); k++ {
				if e.rels[k].lo <= e.rels[k-1].hi {
					return fmt.Errorf("item %d edge %d: intervals %v not sorted and disjoint: %w", i, e.other, e.rels, ErrInvalidProblem)
				}
			}
			var back *edge
			for k := range c.edges[e.other] {
				if c.edges[e.other][k].other == int32(i) {
					back = &c.edges[e.other][k]
				}
			}
			if back == nil || len(back.rels) != len(e.rels) {
				return fmt.Errorf("edge %d-%d not symmetric: %w", i, e.other, ErrInvalidProblem)
			}
			for k, r := range e.rels {
				if nr := back.rels[len(e.rels)-1-k]; nr.lo != -r.hi+1 || nr.hi != -r.lo+1 {
					return fmt.Errorf("edge %d-%d: %v is not the negation of %v: %w", i, e.other, back.rels, e.rels, ErrInvalidProblem)
				}
			}
		}
		live := make([]bool, c.nsec)
		for _, sp := range c.spans[i] {
			if sp.s0 < c.extent[i][0] || sp.s1 > c.extent[i][1] || sp.s0 >= sp.s1 || sp.bytes <= 0 || sp.run0 > sp.bytes {
				return fmt.Errorf("item %d: span %+v outside extent %v: %w", i, sp, c.extent[i], ErrInvalidProblem)
			}
			for k := sp.s0; k < sp.s1; k++ {
				live[k] = true
			}
		}
		for k := range c.nsec {
			if live[k] != slices.Contains(c.secItems[k], int32(i)) {
				return fmt.Errorf("section %d lists item %d wrongly: %w", k, i, ErrInvalidProblem)
			}
		}
	}
	return nil
}
