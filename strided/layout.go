package strided

import (
	"fmt"
	"math"
	"slices"

	"github.com/subarena/subarena/ranges"
)

// Layout is a strided view relative to its buffer's first byte.
//
// Shape lists the dimensions outermost first (numpy order); Strides[k] is the distance in
// bytes between consecutive indices of dimension k and may be negative or zero; the two have
// the same length, and zero dimensions is a scalar. Elem > 0 is the element size in bytes.
// Element (i_0, ..., i_{d-1}) covers the bytes
//
//	[Offset + Σ i_k·Strides[k], Offset + Σ i_k·Strides[k] + Elem)
//
// A Layout is a value; its methods never modify its slices, and the builders return layouts
// with freshly allocated slices. A Layout is well-formed when len(Shape) == len(Strides),
// Elem > 0, every Shape[k] >= 0, the element count and every covered byte fit in an int64,
// and no dimension of size >= 2 has stride math.MinInt64 (its magnitude would not fit).
type Layout struct {
	Offset  int64
	Shape   []int64
	Strides []int64
	Elem    int64
}

// Dense returns the row-major contiguous layout of shape at offset: the innermost dimension
// has stride elem, each outer one the size in bytes of the block inside it.
//
//	Dense(0, [2 3], 4):  strides [12 4]
//	  [ 0  4  8 | 12 16 20 ]   row 0 | row 1
func Dense(offset int64, shape []int64, elem int64) (Layout, error) {
	l := Layout{Offset: offset, Shape: slices.Clone(shape), Strides: make([]int64, len(shape)), Elem: elem}
	if elem <= 0 {
		return Layout{}, fmt.Errorf("strided: dense %v elem %d: %w", shape, elem, ErrInvalidLayout)
	}
	s := elem
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] < 0 {
			return Layout{}, fmt.Errorf("strided: dense %v: dimension %d is negative: %w", shape, k, ErrInvalidLayout)
		}
		l.Strides[k] = s
		var ok bool
		if s, ok = mulChecked(s, max(shape[k], 1)); !ok && k > 0 {
			return Layout{}, fmt.Errorf("strided: dense %v elem %d: stride of dimension %d: %w", shape, elem, k-1, ErrOverflow)
		}
	}
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// Bytes returns the 1-D byte view [offset, offset+n): Shape {n}, Strides {1}, Elem 1.
// It does not validate; a negative n yields a layout Validate rejects.
func Bytes(offset, n int64) Layout {
	return Layout{Offset: offset, Shape: []int64{n}, Strides: []int64{1}, Elem: 1}
}

// geom is what geometry derives from a well-formed layout.
type geom struct {
	elems  int64 // number of elements
	lo, hi int64 // extent [lo, hi); lo == hi == 0 when elems == 0
}

// geometry checks that l is well-formed and returns its element count and extent.
func (l Layout) geometry() (geom, error) {
	if len(l.Shape) != len(l.Strides) {
		return geom{}, fmt.Errorf("strided: layout %v: %d dimensions but %d strides: %w", l, len(l.Shape), len(l.Strides), ErrInvalidLayout)
	}
	if l.Elem <= 0 {
		return geom{}, fmt.Errorf("strided: layout %v: element size %d: %w", l, l.Elem, ErrInvalidLayout)
	}
	g := geom{elems: 1}
	for k, n := range l.Shape {
		if n < 0 {
			return geom{}, fmt.Errorf("strided: layout %v: dimension %d has size %d: %w", l, k, n, ErrInvalidLayout)
		}
		var ok bool
		if g.elems, ok = mulChecked(g.elems, n); !ok {
			return geom{}, fmt.Errorf("strided: layout %v: element count: %w", l, ErrOverflow)
		}
	}
	if g.elems == 0 {
		return geom{}, nil
	}
	var neg, pos int64 // Σ (n_k-1)·S_k over negative and positive strides
	for k, n := range l.Shape {
		s := l.Strides[k]
		if n < 2 || s == 0 {
			continue
		}
		if s == math.MinInt64 {
			return geom{}, fmt.Errorf("strided: layout %v: stride of dimension %d: %w", l, k, ErrOverflow)
		}
		span, ok := mulChecked(n-1, s)
		if ok {
			if s < 0 {
				neg, ok = addChecked(neg, span)
			} else {
				pos, ok = addChecked(pos, span)
			}
		}
		if !ok {
			return geom{}, fmt.Errorf("strided: layout %v: span of dimension %d: %w", l, k, ErrOverflow)
		}
	}
	lo, ok1 := addChecked(l.Offset, neg)
	hi, ok2 := addChecked(l.Offset, pos)
	hi, ok3 := addChecked(hi, l.Elem)
	if !ok1 || !ok2 || !ok3 {
		return geom{}, fmt.Errorf("strided: layout %v: extent: %w", l, ErrOverflow)
	}
	g.lo, g.hi = lo, hi
	return g, nil
}

// Validate checks that l is well-formed (see Layout) and that every byte it covers lies in
// [0, bufSize). A layout with no elements covers nothing and fits any buffer.
func (l Layout) Validate(bufSize int64) error {
	if bufSize < 0 {
		return fmt.Errorf("strided: layout %v: buffer size %d: %w", l, bufSize, ErrInvalidLayout)
	}
	g, err := l.geometry()
	if err != nil {
		return err
	}
	if g.elems > 0 && (g.lo < 0 || g.hi > bufSize) {
		return fmt.Errorf("strided: layout %v covers [%d, %d), outside [0, %d): %w", l, g.lo, g.hi, bufSize, ErrOutOfBounds)
	}
	return nil
}

// NumElems returns the number of elements, the product of Shape (1 for a scalar).
func (l Layout) NumElems() (int64, error) {
	g, err := l.geometry()
	return g.elems, err
}

// Extent returns [lo, hi), the smallest range holding every byte l covers, or the empty
// Range{} when l has no elements.
func (l Layout) Extent() (ranges.Range, error) {
	g, err := l.geometry()
	if err != nil {
		return ranges.Range{}, err
	}
	return ranges.Range{Lo: g.lo, Hi: g.hi}, nil
}

// Clone returns a copy of l that shares no slices with it.
func (l Layout) Clone() Layout {
	return Layout{Offset: l.Offset, Shape: slices.Clone(l.Shape), Strides: slices.Clone(l.Strides), Elem: l.Elem}
}

// Squeeze returns l without its dimensions of size 1: the same elements in
// the same order at the same addresses, with fresh Shape and Strides slices.
func (l Layout) Squeeze() Layout {
	out := Layout{Offset: l.Offset, Elem: l.Elem}
	n := 0
	for _, d := range l.Shape {
		if d != 1 {
			n++
		}
	}
	if n == 0 {
		return out
	}
	dims := make([]int64, 0, 2*n) // one allocation for both slices
	for _, d := range l.Shape {
		if d != 1 {
			dims = append(dims, d)
		}
	}
	for k, d := range l.Shape {
		if d != 1 {
			dims = append(dims, l.Strides[k])
		}
	}
	out.Shape, out.Strides = dims[:n:n], dims[n:]
	return out
}

// Equal reports whether l and o are the same layout field by field (a nil and an empty
// Shape are equal). Two different layouts may still cover the same bytes; compare their
// Normalize forms or covers for that.
func (l Layout) Equal(o Layout) bool {
	return l.Offset == o.Offset && l.Elem == o.Elem && slices.Equal(l.Shape, o.Shape) && slices.Equal(l.Strides, o.Strides)
}

// String formats l as "{off=0 shape=[4 4] strides=[16 4] elem=4}".
func (l Layout) String() string {
	return fmt.Sprintf("{off=%d shape=%v strides=%v elem=%d}", l.Offset, l.Shape, l.Strides, l.Elem)
}

// IsDense reports whether l covers exactly its Extent, with no gap: its bytes form one run.
// A layout with no elements is dense (it covers its empty extent exactly); a malformed one
// is not. Overlapping elements are allowed: a broadcast or a sliding window can be dense.
func (l Layout) IsDense() bool {
	var c canon
	if c.init(l) != nil {
		return false
	}
	return c.empty || c.nd == 0
}

// IsContiguous reports whether l is row-major contiguous: element number i (in row-major
// order) sits at Offset + i·Elem. Size-1 dimensions may have any stride. This is stricter
// than IsDense, which ignores element order.
func (l Layout) IsContiguous() bool {
	g, err := l.geometry()
	if err != nil {
		return false
	}
	if g.elems == 0 {
		return true
	}
	want := l.Elem
	for k := len(l.Shape) - 1; k >= 0; k-- {
		if l.Shape[k] == 1 {
			continue
		}
		if l.Strides[k] != want {
			return false
		}
		want *= l.Shape[k] // cannot overflow: it is at most the extent of a valid layout
	}
	return true
}
