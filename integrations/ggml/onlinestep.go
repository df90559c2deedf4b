//go:build !subarena_extggml

package ggml

/*
#include <string.h>
#include "sa_ggml.h"

// sa_online_compute computes node alone: a one-node graph on the backend.
static int sa_online_compute(ggml_backend_t be, struct ggml_cgraph * g, struct ggml_tensor * node) {
    ggml_graph_clear(g);
    ggml_graph_add_node(g, node);
    return (int) ggml_backend_graph_compute(be, g);
}

// sa_online_place points t at off bytes into buf.
static int sa_online_place(ggml_backend_buffer_t buf, struct ggml_tensor * t, size_t off) {
    t->buffer = NULL;
    t->data = NULL;
    return (int) ggml_backend_tensor_alloc(buf, t, (char *) ggml_backend_buffer_get_base(buf) + off);
}

// sa_online_view points the view t into its base's memory.
static int sa_online_view(struct ggml_tensor * t) {
    t->buffer = NULL;
    t->data = NULL;
    return (int) ggml_backend_view_init(t);
}

static size_t sa_online_alloc_size(ggml_backend_buffer_t buf, struct ggml_tensor * t) {
    return ggml_backend_buffer_get_alloc_size(buf, t);
}

static int sa_online_empty(struct ggml_tensor * t) { return ggml_is_empty(t); }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Adopt makes tensor (a struct ggml_tensor * in host memory of its own,
// not a view, such as a KV cache) resident: it gets a buffer of the arena
// for the rest of the run, its bytes are copied there by a compute op, and
// the tensor points there from now on. Views of it in graphs built
// afterwards point into the arena too (Step re-points those built before).
// The tensor's old memory must stay valid until that copy has run (the next
// Flush, or any Wait of a later step).
func (o *Online) Adopt(tensor unsafe.Pointer) error {
	if o.closed {
		return fmt.Errorf("%w: adopt after Close", ErrOnline)
	}
	t := (*C.struct_ggml_tensor)(tensor)
	switch {
	case t == nil:
		return fmt.Errorf("%w: adopt a nil tensor", ErrOnline)
	case t.view_src != nil:
		return fmt.Errorf("%w: adopt a view (%q)", ErrOnline, C.GoString(&t.name[0]))
	case t.data == nil:
		return fmt.Errorf("%w: adopt %q, which has no memory", ErrOnline, C.GoString(&t.name[0]))
	case t.buffer == o.buf:
		return fmt.Errorf("%w: %q is in the arena already", ErrOnline, C.GoString(&t.name[0]))
	}
	size := int64(C.sa_online_alloc_size(o.buf, t))
	n := int64(C.ggml_nbytes(t))
	b, err := o.alloc(size)
	if err != nil {
		return err
	}
	old, oldBuf := t.data, t.buffer
	if err := o.place(t, b); err != nil {
		t.data, t.buffer = old, oldBuf
		return errors.Join(err, o.a.Release(b))
	}
	dst := t.data
	if _, err := o.submit(o.compute, nil, func() error {
		C.memcpy(dst, old, C.size_t(n))
		return nil
	}, use{b.Whole(), subarena.Write}); err != nil {
		return err
	}
	r := &resident{t: t, buf: b}
	o.residents[t] = r
	o.order = append(o.order, r)
	o.st.Resident += ranges.Granule(o.opts.Granule).Up(size)
	return nil
}

// Tensor classes.
const (
	classExternal = iota // memory of its own: weights, caches not adopted
	classOwn             // placed by the step: op outputs and inputs
	classResident        // adopted
)

// obase is a tensor that owns memory (not a view) as one step sees it.
type obase struct {
	t      *C.struct_ggml_tensor
	class  int
	buf    *subarena.Buffer
	last   int // index of the last node that reads or writes it, -1: none
	node   bool
	output bool
	// readers are the tensors (it or views of it) nodes access it through.
	readers []*oreader
	dropped ranges.Set // bytes discarded, relative to the buffer
}

// oreader is a tensor through which nodes access a base's bytes.
type oreader struct {
	t    *C.struct_ggml_tensor
	b    *obase
	last int
	view *subarena.View
	// cover is the view's bytes relative to its buffer (exact), computed
	// when a discard is considered.
	cover     ranges.Set
	coverDone bool
	exact     bool
}

// stepState is the host's bookkeeping of one Step.
type stepState struct {
	bases   map[*C.struct_ggml_tensor]*obase
	readers map[*C.struct_ggml_tensor]*oreader
	order   []*obase // bases in the order first touched
	leaves  []*obase // own bases that are no node: the inputs
	// byLast lists, per node index, the views of own bases whose last
	// access it is; release, the own bases whose last access it is. Both
	// in the order first touched.
	byLast  [][]*oreader
	release [][]*obase
}

// computes reports whether node t is an op ggml computes (not a view op,
// not empty).
func computes(t *C.struct_ggml_tensor) bool {
	return t.op != C.GGML_OP_NONE && !isViewOp(int32(t.op)) && C.sa_online_empty(t) == 0
}

func (o *Online) classOf(base *C.struct_ggml_tensor) int {
	if _, ok := o.residents[base]; ok {
		return classResident
	}
	if base.data == nil || (base.buffer == o.buf && base.buffer != nil) {
		return classOwn
	}
	return classExternal
}

func baseOf(t *C.struct_ggml_tensor) *C.struct_ggml_tensor {
	if t.view_src != nil {
		return t.view_src
	}
	return t
}

// scan maps the graph: the bases of arena memory each node touches, the
// tensors it touches them through, and the last node touching each.
func (o *Online) scan(nodes []*C.struct_ggml_tensor) *stepState {
	s := &stepState{bases: map[*C.struct_ggml_tensor]*obase{}, readers: map[*C.struct_ggml_tensor]*oreader{}}
	isNode := make(map[*C.struct_ggml_tensor]bool, len(nodes))
	for _, t := range nodes {
		isNode[t] = true
	}
	access := func(a *C.struct_ggml_tensor, i int) {
		bt := baseOf(a)
		b := s.bases[bt]
		if b == nil {
			cl := o.classOf(bt)
			if cl == classExternal {
				return
			}
			b = &obase{t: bt, class: cl, last: -1, node: isNode[bt]}
			if cl == classResident {
				b.buf = o.residents[bt].buf
			}
			s.bases[bt] = b
			s.order = append(s.order, b)
			if cl == classOwn && !b.node {
				s.leaves = append(s.leaves, b)
			}
		}
		b.last = max(b.last, i)
		r := s.readers[a]
		if r == nil {
			r = &oreader{t: a, b: b, last: -1}
			s.readers[a] = r
			b.readers = append(b.readers, r)
		}
		r.last = max(r.last, i)
	}
	for i, t := range nodes {
		if !computes(t) {
			continue
		}
		for j := range C.GGML_MAX_SRC {
			if src := t.src[j]; src != nil {
				access(src, i)
			}
		}
		access(t, i)
		if t.flags&C.GGML_TENSOR_FLAG_OUTPUT != 0 && t.view_src == nil {
			if b := s.bases[t]; b != nil && b.class == classOwn {
				b.output = true
			}
		}
	}
	s.byLast = make([][]*oreader, len(nodes))
	s.release = make([][]*obase, len(nodes))
	for _, b := range s.order {
		if b.class == classOwn && b.last >= 0 {
			s.release[b.last] = append(s.release[b.last], b)
		}
		if b.class != classOwn || b.output {
			continue
		}
		for _, r := range b.readers {
			if r.t != b.t {
				s.byLast[r.last] = append(s.byLast[r.last], r)
			}
		}
	}
	return s
}

// use is one view an op touches and how.
type use struct {
	v   *subarena.View
	acc subarena.Access
}

// Step submits graph (a struct ggml_cgraph * whose tensors were built but
// not allocated, or were placed by an earlier Step) node by node, as the
// package documentation describes, and returns without waiting for the
// engines. The graph must stay alive, and unchanged, until the step's
// compute ops have run (OnlineStep.WaitCompute); so must a graph stepped
// again, which Step places anew. A step that fails is left partly
// submitted: Close the driver, which reports the buffers it left.
func (o *Online) Step(graph unsafe.Pointer, in OnlineInput) (*OnlineStep, error) {
	if o.closed {
		return nil, fmt.Errorf("%w: step after Close", ErrOnline)
	}
	if graph == nil {
		return nil, fmt.Errorf("%w: nil graph", ErrGraph)
	}
	g := (*C.struct_ggml_cgraph)(graph)
	nodes := make([]*C.struct_ggml_tensor, int(C.ggml_graph_n_nodes(g)))
	for i := range nodes {
		nodes[i] = C.ggml_graph_node(g, C.int(i))
	}
	s := o.scan(nodes)
	st := &OnlineStep{Index: o.st.Steps, o: o}
	o.st.Steps++

	// Inputs: placed now, written by the step's first compute op.
	var uses []use
	for _, b := range s.leaves {
		if err := o.allocBase(b); err != nil {
			return nil, fmt.Errorf("input %q: %w", tensorName(b.t), err)
		}
		uses = append(uses, use{b.buf.Whole(), subarena.Write})
	}
	if len(uses) > 0 || in.SetInputs != nil {
		set := in.SetInputs
		ev, err := o.submit(o.compute, nil, func() error {
			if set != nil {
				set()
			}
			return nil
		}, uses...)
		if err != nil {
			return nil, err
		}
		st.Nodes++
		st.lastCompute = ev
	}

	for i, t := range nodes {
		var err error
		if uses, err = o.stepNode(st, s, i, t, in, uses[:0]); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// stepNode places node i (t) of a step, submits its compute op with its
// uses, donates its source's bytes when it computes in place, and then does
// what follows the op: offload, consumption, discards and releases. uses
// is scratch, returned for reuse.
func (o *Online) stepNode(st *OnlineStep, s *stepState, i int, t *C.struct_ggml_tensor, in OnlineInput, uses []use) ([]use, error) {
	bt := baseOf(t)
	b := s.bases[bt]
	if !computes(t) {
		if t.view_src != nil && b != nil {
			if err := o.pointView(t, b); err != nil {
				return uses, err
			}
		}
		return uses, nil
	}
	donor, err := o.placeNode(s, i, t, b)
	if err != nil {
		return uses, err
	}
	for j := range C.GGML_MAX_SRC {
		src := t.src[j]
		if src == nil {
			continue
		}
		v, err := s.view(src)
		if err != nil {
			return uses, fmt.Errorf("node %d %q, source %q: %w", i, tensorName(t), tensorName(src), err)
		}
		if v != nil {
			uses = append(uses, use{v, subarena.Read})
		}
	}
	var out *subarena.View
	if donor == nil {
		v, err := s.view(t)
		if err != nil {
			return uses, fmt.Errorf("node %d %q: %w", i, tensorName(t), err)
		}
		if out = v; out != nil {
			uses = append(uses, use{out, subarena.Write})
		}
	}
	node := t
	ev, err := o.submit(o.compute, nil, func() error {
		if rc := C.sa_online_compute((C.ggml_backend_t)(o.be.Handle()), o.g1, node); rc != C.GGML_STATUS_SUCCESS {
			return fmt.Errorf("ggml_backend_graph_compute of %q: status %d", tensorName(node), int(rc))
		}
		return nil
	}, uses...)
	if err != nil {
		return uses, err
	}
	if donor != nil {
		if out, err = o.takeDonor(s, i, t, b, donor, ev); err != nil {
			return uses, err
		}
	}
	o.st.Nodes++
	st.Nodes++
	st.lastCompute = ev
	return uses, o.afterNode(st, s, i, t, b, out, ev, in)
}

// placeNode gives node i (t) its bytes before its op is submitted: a dying
// source's (returned as the donor, whose bytes the op computes into), a
// buffer of its own, or, for a view, its base's.
func (o *Online) placeNode(s *stepState, i int, t *C.struct_ggml_tensor, b *obase) (*obase, error) {
	switch {
	case b == nil:
		return nil, nil
	case t.view_src == nil && b.class == classOwn:
		if donor := o.donor(s, t, i); donor != nil {
			return donor, o.place(t, donor.buf)
		}
		if err := o.allocBase(b); err != nil {
			return nil, fmt.Errorf("node %d %q: %w", i, tensorName(t), err)
		}
	case t.view_src != nil:
		return nil, o.pointView(t, b)
	}
	return nil, nil
}

// takeDonor moves the donor's bytes to node i's buffer once its op (ev) is
// submitted, and records the op's write of its output view, which it
// returns.
func (o *Online) takeDonor(s *stepState, i int, t *C.struct_ggml_tensor, b, donor *obase, ev sasync.Event) (*subarena.View, error) {
	// The node has read its source and writes the same bytes: they leave
	// the source's buffer for the node's.
	nb, err := o.a.Donate(donor.buf.Whole(), ev)
	switch {
	case err == nil:
		o.st.Donations++
		b.buf = nb
	case errors.Is(err, subarena.ErrPending):
		// Under ir-order the bytes may still carry the users of an
		// earlier owner: the node keeps the source's buffer.
		b.buf, donor.buf = donor.buf, nil
	default:
		return nil, fmt.Errorf("node %d %q: donate %q: %w", i, tensorName(t), tensorName(donor.t), err)
	}
	out, err := s.view(t)
	if err != nil {
		return nil, fmt.Errorf("node %d %q: %w", i, tensorName(t), err)
	}
	if err := o.a.Use(out, ev, subarena.Write); err != nil {
		return nil, fmt.Errorf("use of %v by %v: %w", out, ev, err)
	}
	return out, o.check()
}

// afterNode does what follows node i's op (ev): the copy engine's offload
// of a resident view it wrote, the consumer's read of an output, the
// discards of the views it read last and the releases of the buffers it
// was the last user of.
func (o *Online) afterNode(st *OnlineStep, s *stepState, i int, t *C.struct_ggml_tensor, b *obase, out *subarena.View, ev sasync.Event, in OnlineInput) error {
	if b != nil && b.class == classResident && t.view_src != nil && out != nil {
		if err := o.offload(st, ev, out); err != nil {
			return err
		}
	}
	if b != nil && b.output && t == baseOf(t) {
		if err := o.consume(st, ev, t, b, in.Tokens); err != nil {
			return err
		}
	}
	if !o.opts.NoDiscard {
		for _, r := range s.byLast[i] {
			if err := o.maybeDiscard(r); err != nil {
				return fmt.Errorf("node %d %q: discard %q: %w", i, tensorName(t), tensorName(r.t), err)
			}
		}
	}
	for _, rb := range s.release[i] {
		if rb.buf == nil || rb.buf.Released() {
			continue
		}
		if err := o.a.Release(rb.buf); err != nil {
			return fmt.Errorf("node %d %q: release %q: %w", i, tensorName(t), tensorName(rb.t), err)
		}
		o.st.Releases++
		if err := o.check(); err != nil {
			return err
		}
	}
	return nil
}

// donor returns the source whose bytes node t (at index i) may compute
// into, as ggml-alloc lays an in-place op over its dying parent: t's op can
// run in place (ggml_op_can_inplace), and the source is an own tensor (not
// a view, not an output) with t's type and layout, still wholly held, that
// no node after t touches, and that t reads through no view of it. It returns nil when there is none or the
// options forbid it.
func (o *Online) donor(s *stepState, t *C.struct_ggml_tensor, i int) *obase {
	if o.opts.NoInPlace || int(t.op) >= len(opInplace) || !opInplace[t.op] {
		return nil
	}
	size := C.sa_online_alloc_size(o.buf, t)
	for j := range C.GGML_MAX_SRC {
		src := t.src[j]
		if src == nil || src.view_src != nil {
			continue
		}
		d := s.bases[src]
		if d == nil || d.class != classOwn || d.output || d.last != i || d.buf == nil || !d.dropped.IsEmpty() {
			continue
		}
		if src._type != t._type || src.ne != t.ne || src.nb != t.nb || C.sa_online_alloc_size(o.buf, src) != size {
			continue
		}
		if d.buf.Released() || d.buf.Size() != int64(size) {
			continue
		}
		others := false
		for _, r := range d.readers {
			others = others || (r.t != src && r.last >= i)
		}
		if others {
			continue // a view of it dies here too: its bytes leave whole
		}
		return d
	}
	return nil
}

// allocBase allocates an own base's buffer at the compute engine's point
// and points the tensor at it.
func (o *Online) allocBase(b *obase) error {
	size := int64(C.sa_online_alloc_size(o.buf, b.t))
	buf, err := o.alloc(max(size, 1))
	if err != nil {
		return err
	}
	if err := o.place(b.t, buf); err != nil {
		return errors.Join(err, o.a.Release(buf))
	}
	b.buf = buf
	return nil
}

func (o *Online) place(t *C.struct_ggml_tensor, b *subarena.Buffer) error {
	if rc := C.sa_online_place(o.buf, t, C.size_t(b.Offset())); rc != C.GGML_STATUS_SUCCESS {
		return fmt.Errorf("%w: ggml_backend_tensor_alloc of %q: status %d", ErrAlloc, tensorName(t), int(rc))
	}
	return nil
}

// pointView points a view of an arena base into the base's memory.
func (o *Online) pointView(t *C.struct_ggml_tensor, b *obase) error {
	if b.class == classOwn && b.buf == nil {
		return fmt.Errorf("%w: view %q of %q, which has no memory yet", ErrGraph, tensorName(t), tensorName(b.t))
	}
	if rc := C.sa_online_view(t); rc != C.GGML_STATUS_SUCCESS {
		return fmt.Errorf("%w: ggml_backend_view_init of %q: status %d", ErrAlloc, tensorName(t), int(rc))
	}
	return nil
}

// view returns the subarena view of tensor a (nil for external memory),
// made once per step.
func (s *stepState) view(a *C.struct_ggml_tensor) (*subarena.View, error) {
	r := s.readers[a]
	if r == nil {
		return nil, nil
	}
	if r.view != nil {
		return r.view, nil
	}
	buf := r.b.buf
	if buf == nil {
		return nil, fmt.Errorf("%w: %q has no memory", ErrGraph, tensorName(a))
	}
	l, err := tensorLayout(a)
	if err != nil {
		return nil, err
	}
	v, err := buf.View(l)
	if err != nil {
		return nil, err
	}
	r.view = v
	return v, nil
}

// tensorLayout is t's layout relative to its base's first byte.
func tensorLayout(t *C.struct_ggml_tensor) (strided.Layout, error) {
	x := tensor{name: tensorName(t), typ: int32(t._type)}
	for k := range 4 {
		x.ne[k], x.nb[k] = int64(t.ne[k]), int64(t.nb[k])
	}
	shape, strides, elem, err := layout(&x)
	if err != nil {
		return strided.Layout{}, err
	}
	var off int64
	if t.view_src != nil {
		off = int64(t.view_offs)
	}
	return strided.Layout{Offset: off, Shape: shape, Strides: strides, Elem: elem}, nil
}

func tensorName(t *C.struct_ggml_tensor) string { return C.GoString(&t.name[0]) }

// maybeDiscard discards r's bytes when no later node reads any of them.
func (o *Online) maybeDiscard(r *oreader) error {
	b := r.b
	if b.buf == nil || b.buf.Released() || r.view == nil {
		return nil
	}
	if !r.coverCompute() {
		return nil
	}
	for _, q := range b.readers {
		if q == r || q.last <= r.last {
			continue
		}
		if !q.coverCompute() {
			return nil
		}
		if _, ok := q.cover.OverlapsSet(&r.cover); ok {
			return nil
		}
	}
	rest := ranges.Subtract(&r.cover, &b.dropped)
	if rest.IsEmpty() {
		return nil
	}
	if err := o.a.Discard(r.view); err != nil {
		return err
	}
	b.dropped.AddSet(&r.cover)
	o.st.Discards++
	return o.check()
}

// coverCompute computes r's covered bytes; it reports false when they are
// not known exactly.
func (r *oreader) coverCompute() bool {
	if !r.coverDone {
		r.coverDone = true
		l, err := tensorLayout(r.t)
		if err == nil {
			r.cover, r.exact, err = l.Cover(subarena.CoverBudget)
		}
		r.exact = r.exact && err == nil
	}
	return r.exact
}
