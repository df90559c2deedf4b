package strided

import (
	"github.com/subarena/subarena/ranges"
)

// DefaultBudget is the run budget Cover, AppendCover and Overlap use when given a budget
// <= 0: 4096 runs, 64 KiB of ranges.Range. It keeps a column of a 4096-row matrix (4096
// runs), or one third of a fused QKV projection over 4096 tokens, exact, and bounds the
// worst case (a view can cover billions of runs) to a few tens of microseconds.
const DefaultBudget = 4096

// CoverBudget is the number of runs up to which the Allocator, the trace
// checker and the planner compute a view's covered bytes exactly: 1<<16 runs,
// 1 MiB of ranges.Range. A view that needs more (a column of a huge matrix)
// is represented by a superset of its bytes: users pin more than they use,
// the checker and the lower bound are conservative, never unsound.
const CoverBudget = 1 << 16

// Cover returns the bytes l covers, relative to its buffer, as a ranges.Set.
//
// When the covered bytes form at most budget runs the set is exact and exact is true.
// Otherwise the set is a SUPERSET of the covered bytes (never a subset) with at most budget
// runs, inside l's Extent, and exact is false: the outer dimensions are enumerated and the
// innermost blocks are widened to their extents (see AppendCover). A budget <= 0 means
// DefaultBudget. A malformed layout returns its error and an empty set.
func (l Layout) Cover(budget int) (set ranges.Set, exact bool, err error) {
	exact, err = l.AppendCover(&set, budget)
	return set, exact, err
}

// AppendCover adds the bytes l covers (exactly, or a superset; see Cover) to dst, which may
// already hold other bytes, and reports whether what it added is exact. budget bounds the
// runs added for l, not the size of dst. On error dst is unchanged.
//
// Cost: a layout whose blocks do not interleave (every stride at least the extent of the
// block inside it, after Normalize: the case of every slice, select, split, permute and
// reshape of a dense tensor) is enumerated once, in increasing address order, straight into
// dst: O(runs), and no allocation when dst is empty (or l lies after everything in dst) and
// has the capacity. Interleaved strides (elements of one dimension falling between those of
// another) are unioned by doubling, O(runs · log n) with temporary sets, and exact while
// intermediate results stay within doublingLimit(budget) runs.
//
// The superset for a layout over budget: with the canonical dimensions d_0 (outermost) to
// d_{m-1}, enumerate the longest prefix d_0..d_{p-1} whose index count P fits the budget,
// cut d_p into at most budget/P chunks of consecutive indices, and add each chunk's extent
// as one run. For the column of an 8192x8192 f32 matrix with budget 4096 that is 4096 runs
// of 2 rows each ([r·32768, r·32768 + 32772)), not the whole 256 MiB extent.
func (l Layout) AppendCover(dst *ranges.Set, budget int) (exact bool, err error) {
	if r, ok := l.contiguousRun(); ok {
		dst.Add(r)
		return true, nil
	}
	return l.appendCover(dst, budget)
}

// contiguousRun is AppendCover's shortcut for the commonest layout, one
// dimension of adjacent elements (Bytes, a buffer's whole view): the run
// it covers, and false for any other layout (or one whose extent
// overflows), which takes the general path.
func (l Layout) contiguousRun() (ranges.Range, bool) {
	if len(l.Shape) != 1 || len(l.Strides) != 1 || l.Elem <= 0 {
		return ranges.Range{}, false
	}
	n := l.Shape[0]
	if n < 1 || (n > 1 && l.Strides[0] != l.Elem) {
		return ranges.Range{}, false
	}
	span, ok := mulChecked(n, l.Elem)
	if !ok {
		return ranges.Range{}, false
	}
	hi, ok := addChecked(l.Offset, span)
	if !ok {
		return ranges.Range{}, false
	}
	return ranges.Range{Lo: l.Offset, Hi: hi}, true
}

// appendCover is AppendCover's general path.
func (l Layout) appendCover(dst *ranges.Set, budget int) (exact bool, err error) {
	var c canon
	if err := c.init(l); err != nil {
		return false, err
	}
	if c.empty {
		return true, nil
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	if c.nested() {
		runs := c.nestedRuns()
		if runs > int64(budget) {
			c.addSuperset(dst, budget)
			return false, nil
		}
		if dst.IsEmpty() || c.off >= dst.Bounds().Hi {
			dst.Grow(int(runs))
			c.emitNested(dst, 0, c.off)
			return true, nil
		}
		var tmp ranges.Set
		tmp.Grow(int(runs))
		c.emitNested(&tmp, 0, c.off)
		dst.AddSet(&tmp)
		return true, nil
	}
	if c.rawRuns() <= int64(budget) {
		raw := c.appendRaw(make([]ranges.Range, 0, c.rawRuns()), 0, c.off)
		tmp := ranges.FromRanges(raw...)
		dst.AddSet(&tmp)
		return true, nil
	}
	if tmp, ok := c.coverByDoubling(doublingLimit(budget)); ok && tmp.NumRuns() <= budget {
		dst.AddSet(&tmp)
		return true, nil
	}
	c.addSuperset(dst, budget)
	return false, nil
}

// doublingLimit bounds the intermediate sets of coverByDoubling: 8·budget runs, but at
// least 4096 (small budgets still get exact answers for small interleaved views) and at
// most max(budget, 1<<17) (each doubling step copies them).
func doublingLimit(budget int) int {
	return max(4096, budget, min(8*budget, 1<<17))
}

// emitNested adds the runs of the block dims[k:] starting at base to dst, in increasing
// order (c must be nested), so every Add takes ranges.Set's O(1) append path.
func (c *canon) emitNested(dst *ranges.Set, k int, base int64) {
	if k == c.nd {
		dst.Add(ranges.Range{Lo: base, Hi: base + c.run})
		return
	}
	d := c.dims[k]
	if k == c.nd-1 {
		for i := int64(0); i < d.n; i++ {
			b := base + i*d.s
			dst.Add(ranges.Range{Lo: b, Hi: b + c.run})
		}
		return
	}
	for i := int64(0); i < d.n; i++ {
		c.emitNested(dst, k+1, base+i*d.s)
	}
}

// appendRaw appends one range per run start of the block dims[k:] at base, in index order
// (not necessarily sorted or disjoint).
func (c *canon) appendRaw(rs []ranges.Range, k int, base int64) []ranges.Range {
	if k == c.nd {
		return append(rs, ranges.Range{Lo: base, Hi: base + c.run})
	}
	d := c.dims[k]
	for i := int64(0); i < d.n; i++ {
		rs = c.appendRaw(rs, k+1, base+i*d.s)
	}
	return rs
}

// coverByDoubling computes the exact cover of an interleaved canon, giving up (ok false)
// when an intermediate set exceeds limit runs. For each dimension, innermost first, the
// block B becomes ∪_{i<n} (B + i·s), built from the binary digits of n: with
// P_m = ∪_{i<m} (B + i·s), P_2m = P_m ∪ (P_m + m·s).
func (c *canon) coverByDoubling(limit int) (ranges.Set, bool) {
	cur := ranges.FromRanges(ranges.Range{Lo: 0, Hi: c.run})
	for k := c.nd - 1; k >= 0; k-- {
		d := c.dims[k]
		pow := cur // P_m; cur is not used again until reassigned
		var acc ranges.Set
		shift, m := int64(0), int64(1)
		for n := d.n; n > 0; n >>= 1 {
			if n&1 == 1 {
				t := pow.Clone()
				if t.Translate(shift) != nil {
					return ranges.Set{}, false
				}
				acc.AddSet(&t)
				shift += m * d.s
			}
			if n > 1 {
				t := pow.Clone()
				if t.Translate(m*d.s) != nil {
					return ranges.Set{}, false
				}
				pow.AddSet(&t)
				m *= 2
			}
			if acc.NumRuns() > limit || pow.NumRuns() > limit {
				return ranges.Set{}, false
			}
		}
		cur = acc
	}
	if cur.Translate(c.off) != nil {
		return ranges.Set{}, false
	}
	return cur, true
}

// addSuperset adds to dst at most budget runs that together contain every byte of c (see
// AppendCover for the construction).
func (c *canon) addSuperset(dst *ranges.Set, budget int) {
	p, prefix := 0, int64(1)
	for p < c.nd && satMul(prefix, c.dims[p].n) <= int64(budget) {
		prefix *= c.dims[p].n
		p++
	}
	if p == c.nd { // cannot happen for a layout over budget; be safe anyway
		raw := c.appendRaw(nil, 0, c.off)
		tmp := ranges.FromRanges(raw...)
		dst.AddSet(&tmp)
		return
	}
	d := c.dims[p]
	chunks := min(int64(budget)/prefix, d.n) // >= 1
	size := ceilDiv(d.n, chunks)             // indices per chunk
	inner := c.extAt(p + 1)
	raw := make([]ranges.Range, 0, prefix*ceilDiv(d.n, size))
	var walk func(k int, base int64)
	walk = func(k int, base int64) {
		if k == p {
			for first := int64(0); first < d.n; first += size {
				cnt := min(size, d.n-first)
				lo := base + first*d.s
				raw = append(raw, ranges.Range{Lo: lo, Hi: lo + (cnt-1)*d.s + inner})
			}
			return
		}
		for i := int64(0); i < c.dims[k].n; i++ {
			walk(k+1, base+i*c.dims[k].s)
		}
	}
	walk(0, c.off)
	tmp := ranges.FromRanges(raw...)
	dst.AddSet(&tmp)
}
