package fuzz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
)

// ViewOpKind names one view builder of the Allocator's API.
type ViewOpKind uint8

// The view builders a program may chain. Whole and Dense start a chain at
// the buffer; the others derive a view of a view.
const (
	ViewWhole     ViewOpKind = iota // Buffer.Whole()
	ViewDense                       // Buffer.Dense(Offset, Shape, Elem)
	ViewSlice                       // View.Slice(Dim, Start, Stop, Step)
	ViewSelect                      // View.Select(Dim, Index)
	ViewPermute                     // View.Permute(Perm...)
	ViewTranspose                   // View.Transpose(Dim, Dim2)
	ViewReshape                     // View.Reshape(Shape...)
	ViewExpand                      // View.Expand(Shape...)
	ViewSplit                       // View.Split(Dim, Sizes...)[Part]
	ViewAsStrided                   // View.AsStrided(Offset, Shape, Strides)
)

var viewOpNames = [...]string{"whole", "dense", "slice", "select", "permute", "transpose", "reshape", "expand", "split", "as_strided"}

// String returns the builder's name.
func (k ViewOpKind) String() string {
	if int(k) < len(viewOpNames) {
		return viewOpNames[k]
	}
	return fmt.Sprintf("viewop(%d)", uint8(k))
}

// ViewOp is one builder call with its arguments; fields a kind does not use
// are zero.
type ViewOp struct {
	Kind           ViewOpKind
	Dim, Dim2      int
	Start, Stop    int64
	Step, Index    int64
	Offset, Elem   int64
	Shape, Strides []int64
	Sizes          []int64
	Perm           []int
	Part           int
}

// String formats the call, e.g. "slice(d1 6:-1:-2)".
func (op ViewOp) String() string {
	switch op.Kind {
	case ViewWhole:
		return "whole"
	case ViewDense:
		return fmt.Sprintf("dense(off=%d %v e%d)", op.Offset, op.Shape, op.Elem)
	case ViewSlice:
		return fmt.Sprintf("slice(d%d %d:%d:%d)", op.Dim, op.Start, op.Stop, op.Step)
	case ViewSelect:
		return fmt.Sprintf("select(d%d %d)", op.Dim, op.Index)
	case ViewPermute:
		return fmt.Sprintf("permute%v", op.Perm)
	case ViewTranspose:
		return fmt.Sprintf("transpose(%d %d)", op.Dim, op.Dim2)
	case ViewReshape:
		return fmt.Sprintf("reshape%v", op.Shape)
	case ViewExpand:
		return fmt.Sprintf("expand%v", op.Shape)
	case ViewSplit:
		return fmt.Sprintf("split(d%d %v)[%d]", op.Dim, op.Sizes, op.Part)
	case ViewAsStrided:
		return fmt.Sprintf("as_strided(off=%d %v %v)", op.Offset, op.Shape, op.Strides)
	}
	return op.Kind.String()
}

// layout applies op to parent (a layout relative to a buffer of bufSize
// bytes) the way the Allocator's builder does, and validates the result
// against the buffer.
func (op ViewOp) layout(parent strided.Layout, bufSize int64) (strided.Layout, error) {
	var l strided.Layout
	var err error
	switch op.Kind {
	case ViewWhole:
		l = strided.Bytes(0, bufSize)
	case ViewDense:
		l, err = strided.Dense(op.Offset, op.Shape, op.Elem)
	case ViewSlice:
		l, err = parent.Slice(op.Dim, op.Start, op.Stop, op.Step)
	case ViewSelect:
		l, err = parent.Select(op.Dim, op.Index)
	case ViewPermute:
		l, err = parent.Permute(op.Perm...)
	case ViewTranspose:
		l, err = parent.Transpose(op.Dim, op.Dim2)
	case ViewReshape:
		l, err = parent.Reshape(op.Shape...)
	case ViewExpand:
		l, err = parent.Expand(op.Shape...)
	case ViewSplit:
		var ls []strided.Layout
		ls, err = parent.Split(op.Dim, op.Sizes...)
		if err == nil {
			if op.Part < 0 || op.Part >= len(ls) {
				return strided.Layout{}, fmt.Errorf("split part %d of %d: %w", op.Part, len(ls), strided.ErrInvalidArgument)
			}
			l = ls[op.Part]
		}
	case ViewAsStrided:
		l, err = parent.AsStrided(op.Offset, op.Shape, op.Strides)
	default:
		return strided.Layout{}, fmt.Errorf("view op %v: %w", op.Kind, strided.ErrInvalidArgument)
	}
	if err != nil {
		return strided.Layout{}, err
	}
	if err := l.Validate(bufSize); err != nil {
		return strided.Layout{}, err
	}
	return l, nil
}

// apply performs op through the Allocator's API: on the buffer for Whole
// and Dense, on parent otherwise.
func (op ViewOp) apply(b *subarena.Buffer, parent *subarena.View) (*subarena.View, error) {
	switch op.Kind {
	case ViewWhole:
		return b.Whole(), nil
	case ViewDense:
		return b.Dense(op.Offset, op.Shape, op.Elem)
	}
	if parent == nil {
		return nil, fmt.Errorf("view op %v needs a parent view: %w", op.Kind, strided.ErrInvalidArgument)
	}
	switch op.Kind {
	case ViewSlice:
		return parent.Slice(op.Dim, op.Start, op.Stop, op.Step)
	case ViewSelect:
		return parent.Select(op.Dim, op.Index)
	case ViewPermute:
		return parent.Permute(op.Perm...)
	case ViewTranspose:
		return parent.Transpose(op.Dim, op.Dim2)
	case ViewReshape:
		return parent.Reshape(op.Shape...)
	case ViewExpand:
		return parent.Expand(op.Shape...)
	case ViewSplit:
		vs, err := parent.Split(op.Dim, op.Sizes...)
		if err != nil {
			return nil, err
		}
		if op.Part < 0 || op.Part >= len(vs) {
			return nil, fmt.Errorf("split part %d of %d: %w", op.Part, len(vs), strided.ErrInvalidArgument)
		}
		return vs[op.Part], nil
	case ViewAsStrided:
		return parent.AsStrided(op.Offset, op.Shape, op.Strides)
	}
	return nil, fmt.Errorf("view op %v: %w", op.Kind, strided.ErrInvalidArgument)
}

// maxOracleElems bounds the elements the oracle enumerates for one view.
const maxOracleElems = 1 << 14

// oracleBytes returns the distinct bytes l covers, sorted, by visiting every
// element: the slow reference the Allocator's strided cover is checked
// against (through the byte stamps). ok is false when l has more than
// maxOracleElems elements.
func oracleBytes(l strided.Layout) (bytes []int32, ok bool) {
	n := int64(1)
	for _, s := range l.Shape {
		if s == 0 {
			return nil, true
		}
		n *= s
		if n > maxOracleElems {
			return nil, false
		}
	}
	idx := make([]int64, len(l.Shape))
	for {
		off := l.Offset
		for k, i := range idx {
			off += i * l.Strides[k]
		}
		for b := off; b < off+l.Elem; b++ {
			bytes = append(bytes, int32(b))
		}
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < l.Shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	slices.Sort(bytes)
	return slices.Compact(bytes), true
}

// contiguous reports whether sorted distinct bytes form one gap-free run.
func contiguous(bytes []int32) bool {
	return len(bytes) > 0 && int(bytes[len(bytes)-1]-bytes[0]) == len(bytes)-1
}

// ViewDef is one view of a program: a builder applied to a parent view (or
// to the buffer), its composed layout relative to the buffer, and the bytes
// it covers by the oracle.
type ViewDef struct {
	Buf    int // the buffer
	Parent int // the parent view, or -1 when Op starts at the buffer
	Op     ViewOp
	Layout strided.Layout // composed, relative to the buffer's first byte
	Bytes  []int32        // distinct buffer bytes covered, sorted (oracle)
}

// Chain describes view v and its ancestors down to the buffer, e.g.
// "v7 = permute[1 0] of v5 = dense(off=0 [2 3] e4) of b2".
func (p *Program) Chain(v int) string {
	var sb strings.Builder
	for v >= 0 {
		d := &p.Views[v]
		fmt.Fprintf(&sb, "v%d = %v of ", v, d.Op)
		v = d.Parent
		if v < 0 {
			fmt.Fprintf(&sb, "b%d", d.Buf)
		}
	}
	return sb.String()
}
