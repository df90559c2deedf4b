package subarena

import (
	"fmt"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// CoverBudget is the number of runs up to which a view's covered bytes are
// computed exactly (strided.CoverBudget). A view needing more (a column of a
// huge matrix, say) is indexed by a conservative superset of its bytes:
// users pin more than they read, never less. Discard and Claim of such a
// view are refused, since letting a superset go would hand back bytes the
// program still holds.
const CoverBudget = strided.CoverBudget

// View is a strided layout over a buffer: metadata only, no bytes move.
// Views of views compose into one layout relative to the buffer, so a chain
// of any depth costs O(depth) once, at creation, and nothing per query.
// A View is immutable; it is safe for concurrent use.
type View struct {
	buf *Buffer
	// parent is the view this one was taken from when that is not its
	// buffer's Whole view (depth > 1); nil otherwise (Parent), so that the
	// commonest view stores one pointer less.
	parent *View
	// The layout relative to the buffer's first byte (Layout), in parts:
	// its offset and element size, and its shape then its strides in one
	// slice of twice its rank (carved from the Allocator's dims slabs, or
	// the buffer's wholeDims), so that a View keeps one slice, not two.
	off, elem int64
	dims      []int64
	depth     int32

	// Covered bytes in absolute arena offsets, computed on first use under
	// the Allocator's lock (coverLocked).
	coverDone bool
	coverOK   bool // exact
	// coverFailed says that computing the cover failed; the error is
	// computed again when asked for (coverError), so that no View carries
	// an error's two words for a failure that does not happen to valid
	// layouts.
	coverFailed bool
	// coverOne says that the cover is known and is coverRun, one run:
	// the commonest case, which coverLocked answers with one test.
	coverOne bool
	// coverRun is the cover when it is one run (or none: an empty run);
	// coverMore holds a cover of more runs, allocated only for such a
	// view, so that the commonest view keeps one run and one pointer
	// rather than a set and room for its run.
	coverRun  [1]ranges.Range
	coverMore *ranges.Set
}

// layout returns the view's layout relative to its buffer's first byte.
func (v *View) layout() strided.Layout {
	n := len(v.dims) / 2
	return strided.Layout{Offset: v.off, Shape: v.dims[:n:n], Strides: v.dims[n:], Elem: v.elem}
}

// errZeroView is the error of an operation on a nil or zero View.
var errZeroView = fmt.Errorf("%w: view no Allocator made", ErrForeign)

// made reports whether v was made by a Buffer of some Allocator (not nil,
// not a zero View).
func (v *View) made() bool { return v != nil && v.buf != nil && v.buf.a != nil }

// Buffer returns the buffer the view is over.
func (v *View) Buffer() *Buffer {
	if v == nil {
		return nil
	}
	return v.buf
}

// Parent returns the view this one was taken from, or nil for a view taken
// directly from the buffer.
func (v *View) Parent() *View {
	if v == nil {
		return nil
	}
	if v.depth == 1 {
		return &v.buf.whole
	}
	return v.parent
}

// Depth returns the number of views between this one and its buffer
// (1 for a view of the buffer; the buffer's Whole view has depth 0).
func (v *View) Depth() int {
	if v == nil {
		return 0
	}
	return int(v.depth)
}

// Layout returns the view's layout relative to its buffer's first byte.
// The slices are shared: do not modify them.
func (v *View) Layout() strided.Layout {
	if v == nil {
		return strided.Layout{}
	}
	return v.layout()
}

// String describes the view's layout.
func (v *View) String() string {
	if v == nil {
		return "<nil view>"
	}
	return v.layout().String()
}

// View takes a view of v: l.Offset is relative to v's first byte
// (v.Layout().Offset), l's strides are in bytes of the buffer. The result
// is validated against the buffer's bounds.
func (v *View) View(l strided.Layout) (*View, error) {
	if !v.made() {
		return nil, errZeroView
	}
	l.Offset += v.off
	return v.derive(l, nil)
}

// derive makes the child view of v with layout l (relative to the
// buffer), or returns err. A nil View, or one no Allocator made, fails with
// ErrForeign. The new view keeps a copy of l's shape and strides, taken
// with the view (the caller keeps l's). Each pointer field of the new view
// is stored once.
func (v *View) derive(l strided.Layout, err error) (*View, error) {
	if !v.made() {
		return nil, errZeroView
	}
	if err != nil {
		return nil, err
	}
	b := v.buf
	run, dense := denseRun(&l, b.size)
	if !dense {
		if err := l.Validate(b.size); err != nil {
			return nil, err
		}
	}
	n := len(l.Shape) // Validate checked that Strides has as many
	nv, d := b.a.newView(2 * n)
	for i := range n { // a few dimensions: no call to memmove
		d[i], d[n+i] = l.Shape[i], l.Strides[i]
	}
	nv.buf, nv.depth, nv.off, nv.elem, nv.dims = b, v.depth+1, l.Offset, l.Elem, d
	if v.depth > 0 {
		nv.parent = v
	}
	if dense {
		// Its cover is known already: none to compute at first use.
		if !run.Empty() {
			nv.coverRun[0] = ranges.Range{Lo: b.off + run.Lo, Hi: b.off + run.Hi}
		}
		nv.coverDone, nv.coverOK, nv.coverOne = true, true, !run.Empty()
	}
	return nv, nil
}

// denseRun returns the bytes, relative to the buffer, of a layout of one
// dimension of adjacent elements (strided.Bytes, a vector or a slice of
// one) that lies within a buffer of size bytes, and true; false for any
// other layout, which strided.Layout.Validate and AppendCover then judge.
// Such a layout is valid, and those bytes are its exact cover (none when
// it has no element): derive takes it with neither.
func denseRun(l *strided.Layout, size int64) (ranges.Range, bool) {
	if len(l.Shape) != 1 || len(l.Strides) != 1 || l.Elem <= 0 || l.Offset < 0 || l.Offset > size {
		return ranges.Range{}, false
	}
	n := l.Shape[0]
	if n < 0 || n > (size-l.Offset)/l.Elem || (n > 1 && l.Strides[0] != l.Elem) {
		return ranges.Range{}, false
	}
	return ranges.Range{Lo: l.Offset, Hi: l.Offset + n*l.Elem}, true
}

// derived views what op makes of v's layout (see derive).
func (v *View) derived(op func(l strided.Layout) (strided.Layout, error)) (*View, error) {
	if !v.made() {
		return nil, errZeroView
	}
	return v.derive(op(v.layout()))
}

// Slice views elements start, start+step, ... (< stop) of dimension dim.
func (v *View) Slice(dim int, start, stop, step int64) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Slice(dim, start, stop, step) })
}

// Select views index i of dimension dim, dropping the dimension.
func (v *View) Select(dim int, i int64) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Select(dim, i) })
}

// Permute reorders the dimensions.
func (v *View) Permute(perm ...int) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Permute(perm...) })
}

// Transpose swaps dimensions a and b.
func (v *View) Transpose(a, b int) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Transpose(a, b) })
}

// Reshape views the same elements with another shape; it fails with
// strided.ErrNotExpressible when no single strided layout describes them.
func (v *View) Reshape(shape ...int64) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Reshape(shape...) })
}

// Expand broadcasts size-1 dimensions to shape with stride 0.
func (v *View) Expand(shape ...int64) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.Expand(shape...) })
}

// Split cuts dimension dim into consecutive parts of the given sizes.
func (v *View) Split(dim int, sizes ...int64) ([]*View, error) {
	if !v.made() {
		return nil, errZeroView
	}
	ls, err := v.layout().Split(dim, sizes...)
	if err != nil {
		return nil, err
	}
	out := make([]*View, len(ls))
	for i, l := range ls {
		if out[i], err = v.derive(l, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AsStrided views shape and strides at offset bytes from v's first byte.
func (v *View) AsStrided(offset int64, shape, strides []int64) (*View, error) {
	return v.derived(func(l strided.Layout) (strided.Layout, error) { return l.AsStrided(offset, shape, strides) })
}

// coverLocked returns the runs of the view's covered bytes (absolute),
// computing them once. The runs are v's own: the caller must not change
// them. The caller holds the Allocator's lock.
func (v *View) coverLocked() ([]ranges.Range, bool, error) {
	if !v.coverOne {
		return v.coverSlow()
	}
	return v.coverRun[:], v.coverOK, nil
}

// coverSlow is coverLocked for a cover not computed yet, of no run or of
// several, or whose computing failed.
func (v *View) coverSlow() ([]ranges.Range, bool, error) {
	if !v.coverDone {
		// The layout moved to the buffer's offset covers the view's bytes
		// in arena offsets, appended straight into the view's own run
		// while they are one.
		abs := v.layout()
		abs.Offset += v.buf.off
		var s ranges.Set
		s.Init(v.coverRun[:])
		exact, err := abs.AppendCover(&s, CoverBudget)
		if s.NumRuns() > 1 {
			more := new(ranges.Set)
			*more = s
			v.coverMore = more
		}
		v.coverOK, v.coverFailed, v.coverDone = exact, err != nil, true
		v.coverOne = err == nil && v.coverMore == nil && !v.coverRun[0].Empty()
	}
	runs := v.coverRun[:0:1]
	switch {
	case v.coverMore != nil:
		runs = v.coverMore.Runs()
	case !v.coverRun[0].Empty():
		runs = v.coverRun[:1:1]
	}
	if v.coverFailed {
		return runs, v.coverOK, v.coverError()
	}
	return runs, v.coverOK, nil
}

// setOf returns the runs of a cover (in order, disjoint, none touching)
// as a set that shares their array, with no copy: the caller must not
// change it. Caller holds the Allocator's lock (each run is stored again
// where it is).
func setOf(runs []ranges.Range) ranges.Set {
	var s ranges.Set
	s.Init(runs)
	for _, r := range runs {
		s.Add(r)
	}
	return s
}

// coverError returns the error computing v's cover failed with: the
// layout does not change, so computing it again fails the same way.
func (v *View) coverError() error {
	abs := v.layout()
	abs.Offset += v.buf.off
	var s ranges.Set
	if _, err := abs.AppendCover(&s, CoverBudget); err != nil {
		return err
	}
	return fmt.Errorf("%w: view %v: covered bytes not computable", ErrInvalidLayout, v.layout())
}
