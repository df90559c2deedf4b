package strided

import "math"

// canon is the canonical byte-set form of a layout, what Normalize returns and what Cover
// and Overlap work on:
//
//	bytes = ∪ over i_k in [0, dims[k].n) of [off + Σ i_k·dims[k].s, ... + run)
//
// with every dims[k].n >= 2, dims[k].s > 0, strides strictly decreasing (outermost first),
// and no innermost dimension with s <= run (it would have been folded into the run).
// Getting there from a Layout (init):
//
//  1. drop dimensions of size 1 and of stride 0 (they repeat the same bytes);
//  2. flip negative strides: off moves to the lowest element, s becomes -s;
//  3. sort by stride, outermost (largest) first;
//  4. fold the innermost dimension into the run while s <= run:
//     run becomes (n-1)·s + run (its copies overlap or touch, so they form one run);
//  5. merge neighbours whose lattice is one arithmetic progression: outer (n1, s1) and
//     inner (n2, s2) with s1 = m·s2 and m <= n2 cover exactly the multiples
//     0 .. (n1-1)·m + n2-1 of s2. (Equal strides are the case m = 1.)
//
// Steps 4 and 5 repeat until neither applies. Every step keeps the byte set, so canon is
// a byte-set normal form; the element count and element size are not kept.
type canon struct {
	off   int64 // lowest covered byte
	run   int64 // bytes per run (> 0 unless empty)
	empty bool  // no elements: covers nothing
	nd    int   // number of dimensions in use: dims[:nd]
	dims  [maxCanonDims]cdim
}

// cdim is one canonical dimension.
type cdim struct {
	n   int64 // size, >= 2
	s   int64 // stride, > 0
	ext int64 // bytes from the first byte of this block to the end of its last run
}

// maxCanonDims bounds the canonical dimensions: each has size >= 2 and the element count
// fits in an int64, so there are at most 62. A fixed array (not a slice into the struct
// itself, which would force it onto the heap) keeps canon on the caller's stack.
const maxCanonDims = 63

// init sets c to the canonical form of l, or returns l's well-formedness error.
func (c *canon) init(l Layout) error {
	g, err := l.geometry()
	if err != nil {
		return err
	}
	c.off, c.run, c.empty, c.nd = l.Offset, l.Elem, false, 0
	if g.elems == 0 {
		c.empty = true
		return nil
	}
	for k, n := range l.Shape {
		s := l.Strides[k]
		if n < 2 || s == 0 {
			continue
		}
		if s < 0 {
			c.off += (n - 1) * s // stays within the extent geometry checked
			s = -s
		}
		c.dims[c.nd] = cdim{n: n, s: s}
		c.nd++
	}
	ds := c.dims[:c.nd]
	// Insertion sort, largest stride first; there are few dimensions.
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].s > ds[j-1].s; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	for changed := true; changed; {
		changed = false
		for len(ds) > 0 {
			d := ds[len(ds)-1]
			if d.s > c.run {
				break
			}
			c.run += (d.n - 1) * d.s
			ds = ds[:len(ds)-1]
			changed = true
		}
		for k := 0; k+1 < len(ds); k++ {
			outer, inner := ds[k], ds[k+1]
			if outer.s%inner.s != 0 || outer.s/inner.s > inner.n {
				continue
			}
			m := outer.s / inner.s
			ds[k] = cdim{n: (outer.n-1)*m + inner.n, s: inner.s}
			copy(ds[k+1:], ds[k+2:])
			ds = ds[:len(ds)-1]
			changed = true
			k--
		}
	}
	c.nd = len(ds)
	ext := c.run
	for k := len(ds) - 1; k >= 0; k-- {
		ext += (ds[k].n - 1) * ds[k].s
		ds[k].ext = ext
	}
	return nil
}

// extAt returns the extent of the block made of dims[k:] and the run.
func (c *canon) extAt(k int) int64 {
	if k >= c.nd {
		return c.run
	}
	return c.dims[k].ext
}

// nested reports whether every block fits before the next copy of it starts
// (dims[k].s >= extAt(k+1)): then enumerating the runs in index order yields them in
// increasing address order, overlapping nothing and touching at most their predecessor.
func (c *canon) nested() bool {
	for k := range c.nd {
		if c.dims[k].s < c.extAt(k+1) {
			return false
		}
	}
	return true
}

// rawRuns returns the number of runs enumeration produces, Π dims[k].n, saturating.
func (c *canon) rawRuns() int64 {
	p := int64(1)
	for _, d := range c.dims[:c.nd] {
		p = satMul(p, d.n)
	}
	return p
}

// nestedRuns returns the exact number of runs of a nested canon, saturating. Each block
// contributes n copies of its inner runs, less one per pair of copies that touch (when the
// stride equals the inner extent, the last run of one copy meets the first of the next).
func (c *canon) nestedRuns() int64 {
	cnt := int64(1)
	for k := c.nd - 1; k >= 0; k-- {
		d := c.dims[k]
		cnt = satMul(cnt, d.n)
		if d.s == c.extAt(k+1) && cnt != math.MaxInt64 {
			cnt -= d.n - 1
		}
	}
	return cnt
}

// layout returns c as a Layout.
func (c *canon) layout() Layout {
	l := Layout{Offset: c.off, Shape: make([]int64, c.nd), Strides: make([]int64, c.nd), Elem: c.run}
	for k, d := range c.dims[:c.nd] {
		l.Shape[k], l.Strides[k] = d.n, d.s
	}
	return l
}

// Normalize returns the canonical layout of the bytes l covers: size-1 and stride-0
// dimensions dropped, negative strides flipped (Offset moves to the lowest byte), dimensions
// sorted by decreasing stride, inner dimensions whose copies touch or overlap folded into the
// element size, and neighbouring dimensions that form one arithmetic progression merged.
//
// The result covers exactly the same bytes as l, but not the same elements: its Elem and
// element count may differ, and its element order is by address. All strides in it are
// positive. A layout with no elements normalizes to {Offset: l.Offset, Shape: [0],
// Strides: [0], Elem: l.Elem}; a malformed layout is returned as a clone, unchanged.
//
//	{off=0 shape=[4 2] strides=[4 16] elem=4}   (transpose of a dense 2x4 f32)
//	  → sort:  shape [2 4] strides [16 4]
//	  → fold:  4 copies at stride 4 of 4 bytes touch: run 16
//	  → fold:  2 copies at stride 16 of 16 bytes touch: run 32
//	  = {off=0 shape=[] strides=[] elem=32}
func (l Layout) Normalize() Layout {
	var c canon
	if c.init(l) != nil {
		return l.Clone()
	}
	if c.empty {
		return Layout{Offset: l.Offset, Shape: []int64{0}, Strides: []int64{0}, Elem: l.Elem}
	}
	return c.layout()
}
