package strided

import "fmt"

// Reshape returns a view of l's elements (in row-major order) with a new shape, like
// torch.Tensor.view: no data moves, so it succeeds only when the new shape can be laid
// over l's strides. One entry may be -1: it is inferred from the element count.
//
// l's dimensions are grouped into chunks that are contiguous among themselves (stride of
// dimension k = size·stride of dimension k+1, size-1 dimensions ignored); a new dimension
// may not straddle two chunks. When it would, the result is ErrNotExpressible.
//
//	Dense(0, [4 6], 4).Reshape(2, 12):                  strides [48 4]
//	Dense(0, [4 6], 4).Transpose(0, 1).Reshape(24):      ErrNotExpressible (needs a copy)
//	Dense(0, [4 6], 4).Slice(1, 0, 6, 2).Reshape(2,2,3): strides [48 24 8]
func (l Layout) Reshape(shape ...int64) (Layout, error) {
	g, err := l.geometry()
	if err != nil {
		return Layout{}, err
	}
	shape, err = inferShape(shape, g.elems, l)
	if err != nil {
		return Layout{}, err
	}
	out := Layout{Offset: l.Offset, Shape: shape, Strides: make([]int64, len(shape)), Elem: l.Elem}
	if g.elems <= 1 || len(l.Shape) == 0 {
		// Zero or one element: no stride is ever multiplied by an index > 0 except in the
		// empty case, where nothing is covered. Use dense strides.
		d, err := Dense(l.Offset, shape, l.Elem)
		if err != nil {
			return Layout{}, err
		}
		return d, nil
	}
	// torch's computeStride, in bytes. Walk l's dimensions innermost first, grouping them
	// into chunks; fill the new dimensions of each chunk from the chunk's base stride.
	view := len(shape) - 1
	chunkBase := l.Strides[len(l.Strides)-1]
	tensorNumel, viewNumel := int64(1), int64(1)
	for td := len(l.Shape) - 1; td >= 0; td-- {
		tensorNumel *= l.Shape[td] // a partial product of the element count: fits
		chunkEnds := td == 0
		if !chunkEnds && l.Shape[td-1] != 1 {
			want, ok := mulChecked(tensorNumel, chunkBase)
			chunkEnds = !ok || l.Strides[td-1] != want
		}
		if !chunkEnds {
			continue
		}
		for view >= 0 && (viewNumel < tensorNumel || shape[view] == 1) {
			s, ok := mulChecked(viewNumel, chunkBase)
			if !ok {
				return Layout{}, fmt.Errorf("strided: reshape %v to %v: stride: %w", l, shape, ErrOverflow)
			}
			out.Strides[view] = s
			viewNumel *= shape[view]
			view--
		}
		if viewNumel != tensorNumel {
			return Layout{}, fmt.Errorf("strided: reshape %v to %v: %w", l, shape, ErrNotExpressible)
		}
		if td > 0 {
			chunkBase = l.Strides[td-1]
			tensorNumel, viewNumel = 1, 1
		}
	}
	if view != -1 {
		return Layout{}, fmt.Errorf("strided: reshape %v to %v: %w", l, shape, ErrNotExpressible)
	}
	if _, err := out.geometry(); err != nil {
		return Layout{}, err
	}
	return out, nil
}

// inferShape checks shape against an element count, replacing one -1 by the missing size.
func inferShape(shape []int64, elems int64, l Layout) ([]int64, error) {
	out := make([]int64, len(shape))
	copy(out, shape)
	infer := -1
	known := int64(1)
	for k, n := range out {
		switch {
		case n == -1 && infer >= 0:
			return nil, fmt.Errorf("strided: reshape %v to %v: more than one -1: %w", l, shape, ErrInvalidArgument)
		case n == -1:
			infer = k
		case n < 0:
			return nil, fmt.Errorf("strided: reshape %v to %v: dimension %d is negative: %w", l, shape, k, ErrInvalidArgument)
		default:
			var ok bool
			if known, ok = mulChecked(known, n); !ok {
				return nil, fmt.Errorf("strided: reshape %v to %v: element count: %w", l, shape, ErrOverflow)
			}
		}
	}
	if infer >= 0 {
		if known == 0 || elems%known != 0 {
			return nil, fmt.Errorf("strided: reshape %v (%d elements) to %v: cannot infer -1: %w", l, elems, shape, ErrShapeMismatch)
		}
		out[infer] = elems / known
		known = elems
	}
	if known != elems {
		return nil, fmt.Errorf("strided: reshape %v (%d elements) to %v (%d): %w", l, elems, shape, known, ErrShapeMismatch)
	}
	return out, nil
}
