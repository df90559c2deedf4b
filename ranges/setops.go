package ranges

// Binary set operations. All of them run one merge pass over the two run lists
// (mergeRuns), O(n+m). The in-place forms (AddSet, RemoveSet, RetainSet) first slide the
// receiver's runs to the back of a buffer of n+m slots and merge forward into its front;
// the write position provably never overtakes the unread runs (see mergeRuns), so no
// scratch memory is needed.

type setOp uint8

const (
	opUnion setOp = iota
	opIntersect
	opSubtract
)

// smallOperand is the operand size up to which the in-place operations apply the ranges of
// the operand one by one (O(m log n) searches plus moves) instead of merging.
const smallOperand = 4

// mergeRuns appends the runs of (a op b) to dst and returns it. a and b must be normalized.
//
// dst may share its backing array with a when dst's next free slot lies at least len(b)
// slots before a[0] (the in-place layout): every step reads its input runs into locals before
// it appends, and the number of runs written never exceeds the number of runs consumed
// minus one, so position len(dst) stays below the next unread run of a.
func mergeRuns(dst, a, b []Range, op setOp) []Range {
	i, j := 0, 0
	switch op {
	case opUnion:
		var cur Range
		have := false
		for i < len(a) || j < len(b) {
			var r Range
			if j >= len(b) || (i < len(a) && a[i].Lo <= b[j].Lo) {
				r = a[i]
				i++
			} else {
				r = b[j]
				j++
			}
			if have && r.Lo <= cur.Hi {
				cur.Hi = max(cur.Hi, r.Hi)
				continue
			}
			if have {
				dst = append(dst, cur)
			}
			cur, have = r, true
		}
		if have {
			dst = append(dst, cur)
		}
	case opIntersect:
		for i < len(a) && j < len(b) {
			ar, br := a[i], b[j]
			if ar.Hi < br.Hi {
				i++
			} else {
				j++
			}
			if lo, hi := max(ar.Lo, br.Lo), min(ar.Hi, br.Hi); lo < hi {
				dst = append(dst, Range{lo, hi})
			}
		}
	case opSubtract:
		for i < len(a) {
			cur := a[i]
			i++
			for j < len(b) && b[j].Hi <= cur.Lo {
				j++
			}
			for j < len(b) && b[j].Lo < cur.Hi {
				br := b[j]
				if br.Lo > cur.Lo {
					dst = append(dst, Range{cur.Lo, br.Lo})
				}
				if br.Hi >= cur.Hi {
					cur.Lo = cur.Hi // b[j] may reach into the next run of a: keep it
					break
				}
				cur.Lo = br.Hi
				j++
			}
			if cur.Lo < cur.Hi {
				dst = append(dst, cur)
			}
		}
	}
	return dst
}

// Union returns a new Set holding the bytes in a or b.
func Union(a, b *Set) Set {
	if len(a.runs)+len(b.runs) == 0 {
		return Set{}
	}
	return Set{runs: mergeRuns(make([]Range, 0, len(a.runs)+len(b.runs)), a.runs, b.runs, opUnion)}
}

// Intersect returns a new Set holding the bytes in both a and b.
func Intersect(a, b *Set) Set {
	n := len(a.runs) + len(b.runs)
	if len(a.runs) == 0 || len(b.runs) == 0 {
		return Set{}
	}
	return Set{runs: mergeRuns(make([]Range, 0, n-1), a.runs, b.runs, opIntersect)}
}

// Subtract returns a new Set holding the bytes in a and not in b.
func Subtract(a, b *Set) Set {
	if len(a.runs) == 0 {
		return Set{}
	}
	return Set{runs: mergeRuns(make([]Range, 0, len(a.runs)+len(b.runs)), a.runs, b.runs, opSubtract)}
}

// IntersectRange returns a new Set holding the bytes of s inside r.
func (s *Set) IntersectRange(r Range) Set {
	if r.Lo >= r.Hi {
		return Set{}
	}
	i := firstEndingAfter(s.runs, r.Lo)
	j := firstStartingAtOrAfter(s.runs, i, r.Hi)
	if i == j {
		return Set{}
	}
	runs := make([]Range, j-i)
	copy(runs, s.runs[i:j])
	runs[0].Lo = max(runs[0].Lo, r.Lo)
	runs[len(runs)-1].Hi = min(runs[len(runs)-1].Hi, r.Hi)
	return Set{runs: runs}
}

// AddSet makes s the union of s and o. It allocates only when s's capacity is below
// s.NumRuns()+o.NumRuns() (or, for an o of at most a few runs, when a new run does not fit).
func (s *Set) AddSet(o *Set) {
	switch {
	case s == o || len(o.runs) == 0:
		return
	case len(s.runs) == 0:
		s.runs = append(s.runs[:0], o.runs...)
		return
	case o.runs[0].Lo > s.runs[len(s.runs)-1].Hi:
		s.runs = append(s.runs, o.runs...)
		return
	case len(o.runs) <= smallOperand:
		for _, r := range o.runs {
			s.Add(r)
		}
		return
	}
	s.mergeInPlace(o.runs, opUnion)
}

// RemoveSet makes s the set of bytes of s not in o. Allocation as for AddSet.
func (s *Set) RemoveSet(o *Set) {
	switch {
	case s == o:
		s.Reset()
		return
	case len(o.runs) == 0 || len(s.runs) == 0:
		return
	case len(o.runs) <= smallOperand:
		for _, r := range o.runs {
			s.Remove(r)
		}
		return
	}
	if sb, ob := s.Bounds(), o.Bounds(); !sb.Overlaps(ob) {
		return
	}
	s.mergeInPlace(o.runs, opSubtract)
}

// RetainSet makes s the intersection of s and o. Allocation as for AddSet.
func (s *Set) RetainSet(o *Set) {
	switch {
	case s == o || len(s.runs) == 0:
		return
	case len(o.runs) == 0:
		s.Reset()
		return
	}
	s.mergeInPlace(o.runs, opIntersect)
}

// mergeInPlace replaces s.runs by (s op o) using s's own array as the merge buffer.
func (s *Set) mergeInPlace(o []Range, op setOp) {
	n, m := len(s.runs), len(o)
	var buf []Range
	if cap(s.runs) >= n+m {
		buf = s.runs[:n+m]
		copy(buf[m:], buf[:n]) // memmove: the regions may overlap
	} else {
		buf = make([]Range, n+m, 2*(n+m))
		copy(buf[m:], s.runs)
	}
	s.runs = mergeRuns(buf[:0], buf[m:m+n], o, op)
}
