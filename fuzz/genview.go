package fuzz

import (
	"github.com/subarena/subarena/strided"
)

// chain derives a random chain of views of buffer b starting at view from
// (or at the buffer when from < 0) and returns the last view, or -1 when no
// step applied. Every builder of the API appears: dense roots, slices with
// positive and negative steps, selects, permutes, transposes, reshapes,
// broadcasts (zero strides), splits and arbitrary as_strided layouts with
// negative and zero strides.
func (g *generator) chain(b, from int) int {
	size := g.bufs[b].size
	v := from
	if v < 0 {
		if chance(g.src, 35) {
			v = g.wholeView(b)
		} else {
			v = g.denseRoot(b)
		}
		if v < 0 {
			return -1
		}
	}
	for depth := between(g.src, 0, g.cfg.MaxViewDepth); depth > 0; depth-- {
		l := g.p.Views[v].Layout
		op, ok := g.randomBuilder(l, size)
		if !ok {
			continue
		}
		nl, err := op.layout(l, size)
		if err != nil {
			continue
		}
		if nv := g.addView(b, v, op, nl); nv >= 0 {
			v = nv
		}
	}
	return v
}

// denseRoot adds a row-major view of part of b: up to three dimensions of
// 1-, 2- or 4-byte elements.
func (g *generator) denseRoot(b int) int {
	size := g.bufs[b].size
	elem := []int64{1, 2, 4}[g.src.Intn(3)]
	for elem > size {
		elem /= 2
	}
	maxElems := size / elem
	n := int64(between(g.src, 1, int(maxElems)))
	if chance(g.src, 60) {
		n = maxElems
	}
	shape := g.factor(n)
	off := int64(g.src.Intn(int(size - n*elem + 1)))
	op := ViewOp{Kind: ViewDense, Offset: off, Shape: shape, Elem: elem}
	l, err := op.layout(strided.Layout{}, size)
	if err != nil {
		return -1
	}
	return g.addView(b, -1, op, l)
}

// factor splits n into one to three dimensions whose product is n.
func (g *generator) factor(n int64) []int64 {
	dims := between(g.src, 1, 3)
	shape := []int64{n}
	for len(shape) < dims {
		last := shape[len(shape)-1]
		var divs []int64
		for d := int64(2); d*d <= last; d++ {
			if last%d == 0 {
				divs = append(divs, d)
			}
		}
		if len(divs) == 0 {
			break
		}
		d := divs[g.src.Intn(len(divs))]
		shape[len(shape)-1] = last / d
		shape = append(shape, d)
	}
	if chance(g.src, 20) {
		shape = append([]int64{1}, shape...)
	}
	return shape
}

// randomBuilder picks a builder that may apply to l.
func (g *generator) randomBuilder(l strided.Layout, size int64) (ViewOp, bool) {
	d := len(l.Shape)
	switch g.src.Intn(9) {
	case 0, 1: // slice
		if d == 0 {
			return ViewOp{}, false
		}
		k := g.src.Intn(d)
		n := l.Shape[k]
		if n == 0 {
			return ViewOp{}, false
		}
		start := int64(g.src.Intn(int(n)))
		step := int64(between(g.src, 1, 3))
		if chance(g.src, 35) {
			stop := int64(between(g.src, -1, int(start)-1))
			return ViewOp{Kind: ViewSlice, Dim: k, Start: start, Stop: stop, Step: -step}, true
		}
		stop := int64(between(g.src, int(start)+1, int(n)))
		return ViewOp{Kind: ViewSlice, Dim: k, Start: start, Stop: stop, Step: step}, true
	case 2: // select
		if d == 0 || l.Shape[0] == 0 {
			return ViewOp{}, false
		}
		k := g.src.Intn(d)
		if l.Shape[k] == 0 {
			return ViewOp{}, false
		}
		return ViewOp{Kind: ViewSelect, Dim: k, Index: int64(g.src.Intn(int(l.Shape[k])))}, true
	case 3: // permute
		if d < 2 {
			return ViewOp{}, false
		}
		perm := make([]int, d)
		for i := range perm {
			perm[i] = i
		}
		for i := d - 1; i > 0; i-- {
			j := g.src.Intn(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		return ViewOp{Kind: ViewPermute, Perm: perm}, true
	case 4: // transpose
		if d < 2 {
			return ViewOp{}, false
		}
		return ViewOp{Kind: ViewTranspose, Dim: g.src.Intn(d), Dim2: g.src.Intn(d)}, true
	case 5: // reshape
		n, err := l.NumElems()
		if err != nil || n == 0 {
			return ViewOp{}, false
		}
		return ViewOp{Kind: ViewReshape, Shape: g.factor(n)}, true
	case 6: // expand: broadcast size-1 dimensions and maybe add a leading one
		var shape []int64
		if chance(g.src, 50) {
			shape = append(shape, int64(between(g.src, 1, 3)))
		}
		for _, n := range l.Shape {
			if n == 1 && chance(g.src, 60) {
				shape = append(shape, int64(between(g.src, 1, 4)))
			} else {
				shape = append(shape, -1)
			}
		}
		return ViewOp{Kind: ViewExpand, Shape: shape}, true
	case 7: // split
		if d == 0 {
			return ViewOp{}, false
		}
		k := g.src.Intn(d)
		n := l.Shape[k]
		if n < 2 {
			return ViewOp{}, false
		}
		cut := int64(between(g.src, 1, int(n)-1))
		sizes := []int64{cut, n - cut}
		if n-cut >= 2 && chance(g.src, 40) {
			c2 := int64(between(g.src, 1, int(n-cut)-1))
			sizes = []int64{cut, c2, n - cut - c2}
		}
		return ViewOp{Kind: ViewSplit, Dim: k, Sizes: sizes, Part: g.src.Intn(len(sizes))}, true
	default: // as_strided with arbitrary, negative and zero strides
		dims := between(g.src, 1, 2)
		shape := make([]int64, dims)
		strides := make([]int64, dims)
		lo, hi := int64(0), int64(0) // element offsets relative to the first element
		for k := range shape {
			shape[k] = int64(between(g.src, 1, 4))
			strides[k] = int64(between(g.src, -3, 3)) * l.Elem
			if chance(g.src, 25) {
				strides[k] = int64(between(g.src, -7, 7))
			}
			span := (shape[k] - 1) * strides[k]
			if span < 0 {
				lo += span
			} else {
				hi += span
			}
		}
		// Pick an absolute first byte so that every element fits.
		minBase, maxBase := -lo, size-l.Elem-hi
		if maxBase < minBase {
			return ViewOp{}, false
		}
		base := minBase + int64(g.src.Intn(int(maxBase-minBase+1)))
		return ViewOp{Kind: ViewAsStrided, Offset: base - l.Offset, Shape: shape, Strides: strides}, true
	}
}
