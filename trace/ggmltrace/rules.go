package ggmltrace

import (
	"fmt"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// The rules every tensor of a ggml-alloc-trace/1 document is validated against before
// it is imported (see Import), and the error naming the rule a tensor breaks.

// The rules of a ggml-alloc-trace/1 tensor, named by TensorError.Rule.
const (
	// RuleType: the type is one of ggml's (by ggml_type_name).
	RuleType = "known ggml type"
	// RuleDims: ne and nb have the same length, 1 to 4 (GGML_MAX_DIMS).
	RuleDims = "ne and nb of 1 to 4 dimensions"
	// RuleNe: every ne is at least 1.
	RuleNe = "ne >= 1"
	// RuleBlock: a quantized type's ne[0] is a multiple of its block size.
	RuleBlock = "ne[0] a multiple of the block size"
	// RuleNb: every nb is >= 0, a quantized type's nb[0] is its block's byte size,
	// and a tensor that is not a view has ggml's dense strides.
	RuleNb = "nb consistent with ne and type"
	// RuleNbytes: nbytes is ggml_nbytes of ne, nb and type.
	RuleNbytes = "nbytes = ggml_nbytes(ne, nb, type)"
	// RuleAllocSize: a tensor that is not a view has alloc_size >= nbytes (or null).
	RuleAllocSize = "alloc_size >= nbytes"
	// RuleViewSrc: a view's view_src names a tensor that is not itself a view (ggml
	// collapses views of views onto their base).
	RuleViewSrc = "view_src is a base tensor"
	// RuleViewBounds: a view's bytes [view_offs, view_offs + nbytes) lie inside its
	// base's.
	RuleViewBounds = "view inside its base"
)

// TensorError is a tensor of a ggml-alloc-trace/1 document that breaks a rule of the
// format: its index in "tensors", its name, the rule (one of the Rule* constants or
// trace.RuleOf(trace.ErrOverflow)) and an error matching one of package trace's sentinels
// through errors.Is (trace.ErrFormat, trace.ErrShape, trace.ErrOverflow,
// trace.ErrInvalidSize, trace.ErrOutOfBounds).
type TensorError struct {
	Index int
	Name  string
	Rule  string
	Err   error
}

// Error formats the error as "ggml: tensor I "NAME": rule: detail" (the sentinel's own
// text left out, as in trace.StepError).
func (e *TensorError) Error() string {
	return fmt.Sprintf("ggml: tensor %d %s: %s: %s", e.Index, tracejson.Quote(e.Name), e.Rule, trace.Detail(e.Err))
}

// Unwrap returns the underlying error, so errors.Is matches its sentinel.
func (e *TensorError) Unwrap() error { return e.Err }

// check validates tensor i against ggml's rules (see Import).
func (im *ggmlImporter) check(i int) error {
	x := &im.g.Tensors[i]
	fail := func(rule string, sentinel error, format string, args ...any) error {
		return &TensorError{Index: i, Name: x.Name, Rule: rule,
			Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
	}
	ty, ok := ggmlTypes[x.Type]
	if !ok {
		return fail(RuleType, trace.ErrFormat, "type %s is not one of ggml's (%s)", tracejson.Quote(x.Type), ggmlTypeNames())
	}
	n := len(x.Ne)
	if n != len(x.Nb) || n == 0 || n > 4 {
		return fail(RuleDims, trace.ErrShape, "%d ne and %d nb", len(x.Ne), len(x.Nb))
	}
	elems := int64(1)
	for k, ne := range x.Ne {
		if ne < 1 {
			return fail(RuleNe, trace.ErrShape, "ne[%d] = %d: every dimension has at least one element "+
				"(an empty tensor has no bytes to place)", k, ne)
		}
		if elems, ok = checked.Mul(elems, ne); !ok {
			return fail(trace.RuleOf(trace.ErrOverflow), trace.ErrOverflow, "ne %v: the element count overflows int64", x.Ne)
		}
	}
	for k, nb := range x.Nb {
		if nb < 0 {
			return fail(RuleNb, trace.ErrShape, "nb[%d] = %d is negative", k, nb)
		}
	}
	if x.Ne[0]%ty.blck != 0 {
		return fail(RuleBlock, trace.ErrShape, "ne[0] = %d is not a multiple of %s's block of %d elements",
			x.Ne[0], x.Type, ty.blck)
	}
	if ty.blck > 1 && x.Nb[0] != ty.size {
		return fail(RuleNb, trace.ErrShape, "nb[0] = %d, but a %s block takes %d bytes", x.Nb[0], x.Type, ty.size)
	}
	view := ggmlViewOps[x.Op] || x.ViewSrc != nil
	if !view {
		want, ok := denseNb(make([]int64, 0, n), x.Ne, ty.blck, ty.size)
		if !ok {
			return fail(trace.RuleOf(trace.ErrOverflow), trace.ErrOverflow, "ne %v of %s: the byte size overflows int64", x.Ne, x.Type)
		}
		if !stridesAre(x.Ne, x.Nb, want) {
			return fail(RuleNb, trace.ErrShape, "nb %v is not the dense layout %v of ne %v of %s "+
				"(a tensor that is not a view is dense)", x.Nb, want, x.Ne, x.Type)
		}
	}
	nbytes, ok := ggmlNbytes(x, ty)
	if !ok {
		return fail(trace.RuleOf(trace.ErrOverflow), trace.ErrOverflow, "ne %v and nb %v span more bytes than int64 counts", x.Ne, x.Nb)
	}
	if x.Nbytes != nbytes {
		return fail(RuleNbytes, trace.ErrInvalidSize, "nbytes = %d, but ne %v and nb %v of %s span %d bytes",
			x.Nbytes, x.Ne, x.Nb, x.Type, nbytes)
	}
	if !view {
		if x.AllocSize != nil && *x.AllocSize < nbytes {
			return fail(RuleAllocSize, trace.ErrInvalidSize, "alloc_size = %d is less than nbytes = %d", *x.AllocSize, nbytes)
		}
		return nil
	}
	if x.ViewSrc == nil {
		return nil // classify reports the missing view_src
	}
	j, ok := im.byName[*x.ViewSrc]
	if !ok || j == i {
		return nil // classify reports the unknown view_src
	}
	base := &im.g.Tensors[j]
	if base.ViewSrc != nil || ggmlViewOps[base.Op] {
		return fail(RuleViewSrc, trace.ErrShape, "view_src %s is itself a view (of %s); ggml collapses views of views onto their base",
			tracejson.Quote(base.Name), viewSrcName(base))
	}
	size := base.Nbytes
	if base.AllocSize != nil && *base.AllocSize > size {
		size = *base.AllocSize
	}
	end, ok := checked.Add(x.ViewOffs, nbytes)
	if x.ViewOffs < 0 || !ok || end > size {
		return fail(RuleViewBounds, trace.ErrOutOfBounds, "bytes [%d, %d+%d) outside view_src %s of %d bytes",
			x.ViewOffs, x.ViewOffs, nbytes, tracejson.Quote(base.Name), size)
	}
	return nil
}

func viewSrcName(x *Tensor) string {
	if x.ViewSrc == nil {
		return "nothing"
	}
	return tracejson.Quote(*x.ViewSrc)
}

// ggmlNbytes is ggml_nbytes: the bytes from a tensor's first element to one past its
// last, for ne >= 1 and nb >= 0; false on int64 overflow.
func ggmlNbytes(x *Tensor, ty ggmlType) (int64, bool) {
	var n int64
	var ok bool
	if ty.blck == 1 {
		n = ty.size
	} else if n, ok = checked.Mul(x.Ne[0]/ty.blck, x.Nb[0]); !ok {
		return 0, false
	}
	for k := range x.Ne {
		if k == 0 && ty.blck > 1 {
			continue
		}
		d, ok := checked.Mul(x.Ne[k]-1, x.Nb[k])
		if !ok {
			return 0, false
		}
		if n, ok = checked.Add(n, d); !ok {
			return 0, false
		}
	}
	return n, true
}

// ggmlDense reports whether nb is the dense row-major stride vector of ne.
func ggmlDense(x *Tensor) bool {
	ty, ok := ggmlTypes[x.Type]
	return ok && DenseStrides(x.Ne, x.Nb, ty.blck, ty.size)
}

// DenseStrides reports whether nb is the dense row-major stride vector (in
// bytes) of extents ne, both innermost first as ggml has them, for a type
// whose blocks of blck elements take size bytes: nb[0] is size and every
// further stride is the one before it times the extent before it (the
// innermost counted in blocks), except that an extent of 1 may have any
// stride. A product that overflows int64 is not dense.
func DenseStrides(ne, nb []int64, blck, size int64) bool {
	if len(ne) == 0 || len(ne) != len(nb) || size <= 0 || nb[0] != size {
		return false
	}
	var buf [4]int64 // ggml's GGML_MAX_DIMS
	want, ok := denseNb(buf[:0], ne, blck, size)
	return ok && stridesAre(ne, nb, want)
}

// denseNb appends to dst the dense row-major stride vector (in bytes) of extents ne,
// innermost first, for a type whose blocks of blck elements take size bytes: size, then
// each stride the one before it times the extent before it (the innermost counted in
// blocks). It reports false when a stride overflows int64.
func denseNb(dst, ne []int64, blck, size int64) ([]int64, bool) {
	want := size
	dst = append(dst, want)
	for k := 1; k < len(ne); k++ {
		prev := ne[k-1]
		if k == 1 {
			prev /= blck
		}
		var ok bool
		if want, ok = checked.Mul(want, prev); !ok {
			return dst, false
		}
		dst = append(dst, want)
	}
	return dst, true
}

// stridesAre reports whether nb is want, but for the dimensions of extent 1 in ne, which
// may have any stride.
func stridesAre(ne, nb, want []int64) bool {
	for k := range ne {
		if nb[k] != want[k] && ne[k] != 1 {
			return false
		}
	}
	return true
}
