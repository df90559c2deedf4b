package strided

import (
	"fmt"
	"slices"
)

// The builders derive a view of a view. Each returns a Layout relative to the same buffer
// as l, so views of views compose into one layout and never need their parent again. Each
// checks that l is well-formed, returns an error wrapping one sentinel on bad arguments,
// and never modifies l. None of them checks buffer bounds (they only ever select bytes l
// already covers, except AsStrided): call Validate on the result for that.

// dimErr checks that dim indexes a dimension of l.
func (l Layout) dimErr(op string, dim int) error {
	if dim < 0 || dim >= len(l.Shape) {
		return fmt.Errorf("strided: %s: dimension %d of %d-D layout %v: %w", op, dim, len(l.Shape), l, ErrOutOfBounds)
	}
	return nil
}

// Slice keeps the indices start, start+step, ... of dimension dim, like Python's
// x[start:stop:step] but without negative-index wrapping. step may be negative.
//
//   - step > 0: requires 0 <= start <= stop <= Shape[dim]; keeps start <= i < stop.
//   - step < 0: requires -1 <= stop <= start < Shape[dim] (or start == stop == -1);
//     keeps stop < i <= start, walking backwards (the new stride is negative).
//   - step == 0: ErrInvalidArgument.
//
// The new size is ceil(|stop-start| / |step|), the new stride Strides[dim]·step (ErrOverflow
// if that does not fit), the new Offset moves to element start. An empty result keeps l's
// Offset.
//
//	Dense(0, [8], 1).Slice(0, 1, 8, 3)     bytes 0 1 2 3 4 5 6 7
//	                                              ^     ^     ^     shape [3] strides [3] off 1
//	Dense(0, [8], 1).Slice(0, 6, -1, -2)          ^   ^   ^   ^     shape [4] strides [-2] off 6
func (l Layout) Slice(dim int, start, stop, step int64) (Layout, error) {
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	if err := l.dimErr("slice", dim); err != nil {
		return Layout{}, err
	}
	n := l.Shape[dim]
	var size int64
	switch {
	case step == 0:
		return Layout{}, fmt.Errorf("strided: slice dimension %d of %v: step 0: %w", dim, l, ErrInvalidArgument)
	case step > 0:
		if start < 0 || start > stop || stop > n {
			return Layout{}, fmt.Errorf("strided: slice [%d:%d:%d] of dimension %d (size %d) of %v: %w", start, stop, step, dim, n, l, ErrOutOfBounds)
		}
		size = ceilDiv(stop-start, step)
	default:
		if stop < -1 || stop > start || start >= n {
			return Layout{}, fmt.Errorf("strided: slice [%d:%d:%d] of dimension %d (size %d) of %v: %w", start, stop, step, dim, n, l, ErrOutOfBounds)
		}
		size = ceilDiv(start-stop, -step)
	}
	stride, ok := mulChecked(l.Strides[dim], step)
	if !ok {
		return Layout{}, fmt.Errorf("strided: slice dimension %d of %v with step %d: stride: %w", dim, l, step, ErrOverflow)
	}
	out := l.Clone()
	out.Shape[dim], out.Strides[dim] = size, stride
	if size > 0 {
		out.Offset += start * l.Strides[dim] // element start exists: within l's extent
	}
	return out, nil
}

// Select fixes dimension dim at index i (0 <= i < Shape[dim]) and drops it, like x[..., i].
//
//	Dense(0, [2 3], 4).Select(1, 2)    [ 0  4 (8) | 12 16 (20) ]   shape [2] strides [12] off 8
func (l Layout) Select(dim int, i int64) (Layout, error) {
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	if err := l.dimErr("select", dim); err != nil {
		return Layout{}, err
	}
	if i < 0 || i >= l.Shape[dim] {
		return Layout{}, fmt.Errorf("strided: select index %d of dimension %d (size %d) of %v: %w", i, dim, l.Shape[dim], l, ErrOutOfBounds)
	}
	return Layout{
		Offset:  l.Offset + i*l.Strides[dim], // element i exists: within l's extent
		Shape:   slices.Delete(slices.Clone(l.Shape), dim, dim+1),
		Strides: slices.Delete(slices.Clone(l.Strides), dim, dim+1),
		Elem:    l.Elem,
	}, nil
}

// Permute reorders the dimensions: dimension k of the result is dimension perm[k] of l
// (numpy's transpose(axes)). perm must list every dimension exactly once.
//
//	Dense(0, [2 3 4], 1).Permute(2, 0, 1):  shape [4 2 3] strides [1 12 4]
func (l Layout) Permute(perm ...int) (Layout, error) {
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	if len(perm) != len(l.Shape) {
		return Layout{}, fmt.Errorf("strided: permute %v of %d-D layout %v: %w", perm, len(l.Shape), l, ErrInvalidArgument)
	}
	out := Layout{Offset: l.Offset, Shape: make([]int64, len(perm)), Strides: make([]int64, len(perm)), Elem: l.Elem}
	var seen uint64
	seenBig := map[int]bool(nil)
	for k, p := range perm {
		if p < 0 || p >= len(perm) {
			return Layout{}, fmt.Errorf("strided: permute %v of %d-D layout %v: axis %d: %w", perm, len(l.Shape), l, p, ErrOutOfBounds)
		}
		dup := false
		if p < 64 {
			dup = seen&(1<<p) != 0
			seen |= 1 << p
		} else {
			if seenBig == nil {
				seenBig = map[int]bool{}
			}
			dup = seenBig[p]
			seenBig[p] = true
		}
		if dup {
			return Layout{}, fmt.Errorf("strided: permute %v: axis %d repeated: %w", perm, p, ErrInvalidArgument)
		}
		out.Shape[k], out.Strides[k] = l.Shape[p], l.Strides[p]
	}
	return out, nil
}

// Transpose swaps dimensions a and b.
//
//	Dense(0, [2 3], 4).Transpose(0, 1):  shape [3 2] strides [4 12]   (the column-major view)
func (l Layout) Transpose(a, b int) (Layout, error) {
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	if err := l.dimErr("transpose", a); err != nil {
		return Layout{}, err
	}
	if err := l.dimErr("transpose", b); err != nil {
		return Layout{}, err
	}
	out := l.Clone()
	out.Shape[a], out.Shape[b] = out.Shape[b], out.Shape[a]
	out.Strides[a], out.Strides[b] = out.Strides[b], out.Strides[a]
	return out, nil
}

// Expand broadcasts l to shape, numpy-style: shape may add leading dimensions (stride 0),
// and each existing dimension keeps its size (or -1, "keep"), or grows from size 1 to any
// size >= 0 with stride 0. Anything else is ErrShapeMismatch. The result covers the same
// bytes as l (or none, if a new size is 0).
//
//	Dense(0, [3 1], 4).Expand(2, 3, 5):  shape [2 3 5] strides [0 4 0]
func (l Layout) Expand(shape ...int64) (Layout, error) {
	if _, err := l.geometry(); err != nil {
		return Layout{}, err
	}
	lead := len(shape) - len(l.Shape)
	if lead < 0 {
		return Layout{}, fmt.Errorf("strided: expand %v to %v: fewer dimensions: %w", l, shape, ErrShapeMismatch)
	}
	out := Layout{Offset: l.Offset, Shape: make([]int64, len(shape)), Strides: make([]int64, len(shape)), Elem: l.Elem}
	for k, n := range shape {
		if k < lead {
			if n < 0 {
				return Layout{}, fmt.Errorf("strided: expand %v to %v: new dimension %d has size %d: %w", l, shape, k, n, ErrInvalidArgument)
			}
			out.Shape[k] = n
			continue
		}
		old, s := l.Shape[k-lead], l.Strides[k-lead]
		switch {
		case n == -1 || n == old:
			out.Shape[k], out.Strides[k] = old, s
		case n < 0:
			return Layout{}, fmt.Errorf("strided: expand %v to %v: dimension %d has size %d: %w", l, shape, k, n, ErrInvalidArgument)
		case old == 1:
			out.Shape[k] = n
		default:
			return Layout{}, fmt.Errorf("strided: expand %v to %v: dimension %d has size %d, not 1: %w", l, shape, k, old, ErrShapeMismatch)
		}
	}
	if _, err := out.geometry(); err != nil {
		return Layout{}, err
	}
	return out, nil
}

// Split cuts dimension dim into consecutive pieces of the given sizes (torch.split with a
// list): sizes must be >= 0 and add up to Shape[dim]. Piece p is
// l.Slice(dim, Σ_{q<p} sizes[q], Σ_{q<=p} sizes[q], 1).
//
//	fused gate/up output [T, 2F] f32, Split(1, F, F):
//	  row r: |gate: off r·8F, F·4 bytes|up: off r·8F + 4F, F·4 bytes|
//	  gate: shape [T F] strides [8F 4] off 0;  up: the same at off 4F
func (l Layout) Split(dim int, sizes ...int64) ([]Layout, error) {
	if _, err := l.geometry(); err != nil {
		return nil, err
	}
	if err := l.dimErr("split", dim); err != nil {
		return nil, err
	}
	var total int64
	for _, s := range sizes {
		if s < 0 {
			return nil, fmt.Errorf("strided: split dimension %d of %v into %v: negative size: %w", dim, l, sizes, ErrInvalidArgument)
		}
		var ok bool
		if total, ok = addChecked(total, s); !ok {
			return nil, fmt.Errorf("strided: split dimension %d of %v into %v: sum: %w", dim, l, sizes, ErrOverflow)
		}
	}
	if total != l.Shape[dim] {
		return nil, fmt.Errorf("strided: split dimension %d (size %d) of %v into %v (sum %d): %w", dim, l.Shape[dim], l, sizes, total, ErrShapeMismatch)
	}
	out := make([]Layout, len(sizes))
	start := int64(0)
	for p, s := range sizes {
		v, err := l.Slice(dim, start, start+s, 1)
		if err != nil {
			return nil, err
		}
		out[p] = v
		start += s
	}
	return out, nil
}

// AsStrided returns the layout with l.Offset+offset, the given shape and strides (copied)
// and l's element size, whatever l's own shape and strides were: torch.as_strided relative
// to l's first byte. It checks only well-formedness; Validate the result against the buffer.
func (l Layout) AsStrided(offset int64, shape, strides []int64) (Layout, error) {
	if l.Elem <= 0 {
		return Layout{}, fmt.Errorf("strided: as_strided on %v: %w", l, ErrInvalidLayout)
	}
	off, ok := addChecked(l.Offset, offset)
	if !ok {
		return Layout{}, fmt.Errorf("strided: as_strided offset %d on %v: %w", offset, l, ErrOverflow)
	}
	out := Layout{Offset: off, Shape: slices.Clone(shape), Strides: slices.Clone(strides), Elem: l.Elem}
	if _, err := out.geometry(); err != nil {
		return Layout{}, err
	}
	return out, nil
}
