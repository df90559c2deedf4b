package block

import (
	"fmt"
	"unsafe"

	"github.com/subarena/subarena"
)

// Tensor is a strided float32 tensor over a slice: element (i_0, ...,
// i_{k-1}) is Data[Off + Σ i_j·Strides[j]]. Strides count elements, not
// bytes, and may be zero or negative. Kernels read and write only through
// Off and Strides, so a Tensor over a subarena view reads exactly the bytes
// the view covers, and the same kernel runs on a dense Go slice.
type Tensor struct {
	Data    []float32
	Off     int
	Shape   []int
	Strides []int
}

// rowMajor returns the row-major tensor of shape over data[0:Π shape].
func rowMajor(data []float32, shape ...int) Tensor {
	t := Tensor{Data: data, Shape: shape, Strides: make([]int, len(shape))}
	s := 1
	for k := len(shape) - 1; k >= 0; k-- {
		t.Strides[k] = s
		s *= shape[k]
	}
	return t
}

// newDense allocates a zeroed row-major tensor of shape: its own Go slice.
func newDense(shape ...int) Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return rowMajor(make([]float32, n), shape...)
}

// Elems returns the number of elements, Π Shape.
func (t Tensor) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes returns the size of the tensor's elements in bytes (4 per element,
// whatever the strides).
func (t Tensor) Bytes() int64 { return int64(t.Elems()) * 4 }

// Row returns the 1-D tensor t[i] of a 2-D tensor.
func (t Tensor) Row(i int) Tensor {
	return Tensor{Data: t.Data, Off: t.Off + i*t.Strides[0], Shape: t.Shape[1:], Strides: t.Strides[1:]}
}

// Rows returns rows [lo, hi) of dimension 0.
func (t Tensor) Rows(lo, hi int) Tensor {
	shape := append([]int{hi - lo}, t.Shape[1:]...)
	return Tensor{Data: t.Data, Off: t.Off + lo*t.Strides[0], Shape: shape, Strides: t.Strides}
}

// Reshape3 views a 2-D tensor [n, a·b] whose last dimension is contiguous
// as [n, a, b].
func (t Tensor) Reshape3(a, b int) Tensor {
	return Tensor{Data: t.Data, Off: t.Off, Shape: []int{t.Shape[0], a, b}, Strides: []int{t.Strides[0], b * t.Strides[1], t.Strides[1]}}
}

// checkShape returns ErrLayout unless t has exactly the given shape and
// every element it addresses lies inside Data.
func (t Tensor) checkShape(name string, shape ...int) error {
	if len(t.Shape) != len(shape) || len(t.Strides) != len(shape) {
		return fmt.Errorf("%w: %s has shape %v, want %v", ErrLayout, name, t.Shape, shape)
	}
	lo, hi := t.Off, t.Off
	for k, d := range shape {
		if t.Shape[k] != d {
			return fmt.Errorf("%w: %s has shape %v, want %v", ErrLayout, name, t.Shape, shape)
		}
		if d == 0 {
			return nil
		}
		if s := t.Strides[k] * (d - 1); s < 0 {
			lo += s
		} else {
			hi += s
		}
	}
	if lo < 0 || hi >= len(t.Data) {
		return fmt.Errorf("%w: %s addresses [%d, %d] outside its %d elements", ErrLayout, name, lo, hi, len(t.Data))
	}
	return nil
}

// FromView returns the float32 tensor a subarena view describes, over its
// buffer's backing bytes. The view's element size must be 4 and its offset
// and strides multiples of 4; the buffer's bytes must be 4-byte aligned
// (they are when the arena's backing came from Backing). The tensor aliases
// the arena: it is valid while the program holds the view's bytes and the
// op using it is the one the view was Used for.
func FromView(v *subarena.View) (Tensor, error) {
	l := v.Layout()
	if l.Elem != 4 || l.Offset%4 != 0 {
		return Tensor{}, fmt.Errorf("%w: view %v: element %d at byte %d", ErrLayout, l, l.Elem, l.Offset)
	}
	data, err := floats(v.Buffer().Bytes())
	if err != nil {
		return Tensor{}, fmt.Errorf("view %v: %w", l, err)
	}
	t := Tensor{Data: data, Off: int(l.Offset / 4), Shape: make([]int, len(l.Shape)), Strides: make([]int, len(l.Shape))}
	for k := range l.Shape {
		if l.Strides[k]%4 != 0 {
			return Tensor{}, fmt.Errorf("%w: view %v: stride %d of dimension %d", ErrLayout, l, l.Strides[k], k)
		}
		t.Shape[k], t.Strides[k] = int(l.Shape[k]), int(l.Strides[k]/4)
	}
	return t, nil
}

// floats reinterprets b as float32s in the machine's byte order. It is the
// one unsafe conversion of the package, and it checks what makes it sound:
// b is non-empty, 4-byte aligned, and a whole number of float32s. The
// result aliases b.
func floats(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: no backing bytes (the arena needs Backing)", ErrLayout)
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%4 != 0 || len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: %d bytes at %p are not whole aligned float32s", ErrLayout, len(b), p)
	}
	return unsafe.Slice((*float32)(p), len(b)/4), nil
}

// backing returns n bytes (a multiple of 4) whose first byte is aligned for
// float32, for an arena's Config.Backing: they are allocated as float32s.
func backing(n int64) []byte {
	f := make([]float32, (n+3)/4)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), len(f)*4)
}
