//go:build !subarena_extggml

package ggml

/*
#include <stdlib.h>
#include <string.h>
#include "sa_ggml.h"

static struct ggml_context * sa_online_ctx(void) {
    struct ggml_init_params ip = { ggml_graph_overhead_custom(1, false), NULL, true };
    return ggml_init(ip);
}

static struct ggml_cgraph * sa_online_graph(struct ggml_context * ctx) {
    return ggml_new_graph_custom(ctx, 1, false);
}

static ggml_backend_t sa_online_backend(int threads, ggml_threadpool_t * pool) {
    ggml_backend_t b = ggml_backend_cpu_init();
    *pool = NULL;
    if (b == NULL) {
        return NULL;
    }
    ggml_backend_cpu_set_n_threads(b, threads);
    if (threads > 1) {
        // Workers sleep between nodes instead of polling: the host and the
        // other engines share the cores with them.
        struct ggml_threadpool_params p = ggml_threadpool_params_default(threads);
        p.poll = 0;
        *pool = ggml_threadpool_new(&p);
        if (*pool == NULL) {
            ggml_backend_free(b);
            return NULL;
        }
        ggml_backend_cpu_set_threadpool(b, *pool);
    }
    return b;
}

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
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// ErrOnline reports a misuse of an Online driver (a step after Close, a
// tensor Adopt cannot take) or work it left behind: bytes still held when
// it closes.
var ErrOnline = errors.New("ggml: online run")

// Engine names on an Online driver's Timeline.
const (
	OnlineCompute  = "compute"
	OnlineCopy     = "copy"
	OnlineConsumer = "consumer"
)

// OnlineOptions configure an Online driver.
type OnlineOptions struct {
	// Capacity is the arena size in bytes, rounded up to the granule. It
	// is fixed: when an allocation does not fit, the host waits for the
	// work the Allocator names.
	Capacity int64
	// Granule is the Allocator's granule, a power of two no smaller than
	// the CPU buffer's alignment; 0 means arena.DefaultGranule.
	Granule int64
	// Policy is the Allocator's release policy.
	Policy subarena.Policy
	// Threads is the number of threads ggml's CPU backend computes each
	// node with; 0 means 1.
	Threads int
	// NoInPlace gives every node's output a buffer of its own. By
	// default an op ggml can run in place (ggml_op_can_inplace) computes
	// into a source of the same type and layout that no later node reads,
	// as ggml-alloc does: the source's bytes are donated to the node's
	// output (Allocator.Donate) once the node is submitted.
	NoInPlace bool
	// NoDiscard releases whole buffers only: no Discard of a view whose
	// readers are done while the rest of its buffer is still read.
	NoDiscard bool
	// HoldConsumer holds each consumer op until the compute engine has
	// completed HoldConsumer more nodes after the output node it reads, or
	// the host waits (an allocation that does not fit, OnlineStep.Wait,
	// Flush): a consumer slow enough for any premature reuse of the
	// output's bytes to land before it reads them. 0 holds nothing.
	HoldConsumer int
	// CopyDelay and ConsumerDelay, when set, return how long the copy
	// engine's n-th op and the consumer engine's n-th op (from 0) sleep
	// before they read: engines with delays of their own.
	CopyDelay, ConsumerDelay func(n int) time.Duration
	// Check runs the Allocator's CheckInvariants after every call the
	// host makes to it.
	Check bool
}

// OnlineInput is what Step needs besides the graph.
type OnlineInput struct {
	// SetInputs writes the graph's inputs (leaves without data, placed in
	// the arena when the step starts), for instance with
	// ggml_backend_tensor_set. It runs on the compute engine as the step's
	// first op, after every op of earlier steps on that engine. Nil writes
	// nothing.
	SetInputs func()
	// Tokens is the number of new tokens per sequence: the consumer reads
	// the row of the last one of each sequence, rows Tokens-1,
	// 2·Tokens-1, ... of a [width, rows] output. 0 reads every row.
	Tokens int
}

// OnlineStep is one graph submitted by Step. The copy and consumer
// engines fill in what Outputs and Offloads return; read them after Wait
// or Flush.
type OnlineStep struct {
	// Index counts steps from 0.
	Index int
	// Nodes counts the compute ops the step submitted (the input op
	// included).
	Nodes int

	o                 *Online
	lastCompute       sasync.Event
	copies, consumers []sasync.Event
	// One slot per copy and consumer op, written by that op only.
	offloads, outputs []*[]byte
}

// Outputs returns, per output node in execution order, the rows the
// consumer engine read (in row-major order of the view); nil for an op
// that has not run yet.
func (s *OnlineStep) Outputs() [][]byte { return slotBytes(s.outputs) }

// Offloads returns, per write into a resident tensor in execution order,
// the bytes the copy engine read (in row-major order of the written view);
// nil for an op that has not run yet.
func (s *OnlineStep) Offloads() [][]byte { return slotBytes(s.offloads) }

func slotBytes(slots []*[]byte) [][]byte {
	out := make([][]byte, len(slots))
	for i, p := range slots {
		out[i] = *p
	}
	return out
}

// OnlineStats are an Online driver's figures.
type OnlineStats struct {
	// Arena is the Allocator's snapshot: HighWater is the arena the run
	// needed, resident tensors included.
	Arena subarena.Stats
	// Resident counts the bytes of adopted tensors, rounded to the
	// granule.
	Resident int64
	// Steps, Nodes and Ops count steps, compute ops and ops on all three
	// engines.
	Steps, Nodes, Ops int
	// Allocs and AllocBytes count buffers allocated and their bytes
	// rounded to the granule: what an allocator that never reuses would
	// need.
	Allocs     int
	AllocBytes int64
	// Releases, Discards and Donations count Release, Discard and Donate
	// calls.
	Releases, Discards, Donations int
	// Stalls counts allocations that did not fit at first: the host waited
	// for the engines and retried.
	Stalls int
}

// resident is an adopted tensor.
type resident struct {
	t   *C.struct_ggml_tensor
	buf *subarena.Buffer
}

// Online drives ggml graphs node by node on subarena memory: see the
// package documentation. Its methods are the host program: call them from
// one goroutine at a time.
type Online struct {
	opts OnlineOptions

	tl                        *sasync.Timeline
	x                         *sasync.Executor
	a                         *subarena.Allocator
	compute, copier, consumer sasync.EngineID

	mem  unsafe.Pointer // the arena's C memory
	size int64
	buf  C.ggml_backend_buffer_t
	be   C.ggml_backend_t
	pool C.ggml_threadpool_t
	gctx *C.struct_ggml_context
	g1   *C.struct_ggml_cgraph // the one-node graph, used by the compute engine only

	residents map[*C.struct_ggml_tensor]*resident
	order     []*resident

	// hold state: guarded by hmu.
	hmu       sync.Mutex
	hcond     sync.Cond
	done      sasync.Seq // compute ops completed
	epoch     uint64     // bumped whenever the host waits: releases every hold
	unsub     func()
	nCopies   int // copy ops submitted (for CopyDelay)
	nConsumed int // consumer ops submitted (for ConsumerDelay)

	st     OnlineStats
	closed bool
}

// NewOnline maps an arena of opts.Capacity bytes, wraps it as a ggml CPU
// buffer and a subarena.Allocator, and starts the three engines.
func NewOnline(opts OnlineOptions) (*Online, error) {
	if opts.Granule == 0 {
		opts.Granule = arena.DefaultGranule
	}
	align := bufferAlignment(cpuBufferType())
	if opts.Granule < align || opts.Granule&(opts.Granule-1) != 0 {
		return nil, fmt.Errorf("%w: granule %d is not a power of two >= %d", ErrOnline, opts.Granule, align)
	}
	if opts.Capacity <= 0 {
		return nil, fmt.Errorf("%w: capacity %d", ErrOnline, opts.Capacity)
	}
	opts.Capacity = ranges.Granule(opts.Granule).Up(opts.Capacity)
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	o := &Online{opts: opts, tl: sasync.NewTimeline(), residents: map[*C.struct_ggml_tensor]*resident{}}
	o.hcond.L = &o.hmu
	var err error
	if o.compute, err = o.tl.AddEngine(OnlineCompute, sasync.Compute); err != nil {
		return nil, err
	}
	if o.copier, err = o.tl.AddEngine(OnlineCopy, sasync.Copy); err != nil {
		return nil, err
	}
	if o.consumer, err = o.tl.AddEngine(OnlineConsumer, sasync.Host); err != nil {
		return nil, err
	}
	o.mem = C.sa_arena_alloc(C.size_t(opts.Capacity))
	if o.mem == nil {
		return nil, fmt.Errorf("%w: no memory for a %d-byte arena", ErrAlloc, opts.Capacity)
	}
	o.size = opts.Capacity
	o.buf = C.ggml_backend_cpu_buffer_from_ptr(o.mem, C.size_t(o.size))
	o.be = C.sa_online_backend(C.int(opts.Threads), &o.pool)
	o.gctx = C.sa_online_ctx()
	if o.buf == nil || o.be == nil || o.gctx == nil {
		o.freeC()
		return nil, fmt.Errorf("%w: ggml could not make the buffer, backend or graph", ErrAlloc)
	}
	o.g1 = C.sa_online_graph(o.gctx)
	o.a, err = subarena.New(subarena.Config{
		Capacity: o.size,
		Granule:  opts.Granule,
		Policy:   opts.Policy,
		Backing:  unsafe.Slice((*byte)(o.mem), o.size),
		Timeline: o.tl,
	})
	if err != nil {
		o.freeC()
		return nil, err
	}
	o.unsub = o.tl.Subscribe(func(c sasync.Clock) {
		o.hmu.Lock()
		if c[o.compute] > o.done {
			o.done = c[o.compute]
			o.hcond.Broadcast()
		}
		o.hmu.Unlock()
	})
	o.x = sasync.NewExecutor(o.tl)
	o.x.Start(context.Background())
	return o, nil
}

// freeC frees the C side: backend, graph context, buffer and arena.
func (o *Online) freeC() {
	if o.be != nil {
		C.ggml_backend_free(o.be)
		o.be = nil
	}
	if o.pool != nil {
		C.ggml_threadpool_free(o.pool)
		o.pool = nil
	}
	if o.gctx != nil {
		C.ggml_free(o.gctx)
		o.gctx, o.g1 = nil, nil
	}
	freeArenaBuffer(&o.buf, &o.mem, o.size)
}

// Allocator returns the subarena Allocator behind the arena.
func (o *Online) Allocator() *subarena.Allocator { return o.a }

// Timeline returns the Timeline of the three engines (named OnlineCompute,
// OnlineCopy and OnlineConsumer).
func (o *Online) Timeline() *sasync.Timeline { return o.tl }

// Buffer returns the ggml_backend_buffer_t over the arena.
func (o *Online) Buffer() unsafe.Pointer { return unsafe.Pointer(o.buf) }

// Stats returns the driver's figures with a fresh snapshot of the
// Allocator.
func (o *Online) Stats() OnlineStats {
	st := o.st
	st.Arena = o.a.Stats()
	return st
}

// StateTensors returns the tensors with memory of their own that graph's
// nodes write into through views — its KV caches — in the order first
// written: the tensors to Adopt.
func StateTensors(graph unsafe.Pointer) []unsafe.Pointer {
	g := (*C.struct_ggml_cgraph)(graph)
	var out []unsafe.Pointer
	for i := range int(C.ggml_graph_n_nodes(g)) {
		t := C.ggml_graph_node(g, C.int(i))
		base := t.view_src
		if base == nil || isViewOp(int32(t.op)) || t.op == C.GGML_OP_NONE || base.data == nil {
			continue
		}
		if p := unsafe.Pointer(base); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

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
		if rc := C.sa_online_compute(o.be, o.g1, node); rc != C.GGML_STATUS_SUCCESS {
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

// offload submits a copy op reading v (written by the op behind after) to
// host memory.
func (o *Online) offload(st *OnlineStep, after sasync.Event, v *subarena.View) error {
	op := gatherOp{engine: o.copier, v: v, src: v.Buffer().Bytes(), l: v.Layout(), delay: o.opts.CopyDelay, n: o.nCopies}
	o.nCopies++
	return o.submitGather(after, op, &st.offloads, &st.copies)
}

// consume submits a consumer op reading the output rows of t.
func (o *Online) consume(st *OnlineStep, after sasync.Event, t *C.struct_ggml_tensor, b *obase, tokens int) error {
	l, err := rowsLayout(t, tokens)
	if err != nil {
		return err
	}
	v, err := b.buf.View(l)
	if err != nil {
		return err
	}
	op := gatherOp{engine: o.consumer, v: v, src: b.buf.Bytes(), l: l, delay: o.opts.ConsumerDelay, n: o.nConsumed}
	o.nConsumed++
	if hold := o.opts.HoldConsumer; hold > 0 {
		o.hmu.Lock()
		epoch := o.epoch
		o.hmu.Unlock()
		target := after.Seq + sasync.Seq(hold)
		op.before = func() { o.holdUntil(target, epoch) }
	}
	return o.submitGather(after, op, &st.outputs, &st.consumers)
}

// gatherOp is a copy or consumer op: it reads v, copying the bytes of
// layout l of src to host memory.
type gatherOp struct {
	engine sasync.EngineID
	v      *subarena.View
	src    []byte
	l      strided.Layout
	// delay, when set, is how long the op sleeps: delay(n).
	delay func(n int) time.Duration
	n     int
	// before, when set, runs first in the op.
	before func()
}

// submitGather submits op on its engine after after, appending the slot
// the op writes its bytes to to *slots and the op's event to *events.
func (o *Online) submitGather(after sasync.Event, op gatherOp, slots *[]*[]byte, events *[]sasync.Event) error {
	slot := new([]byte)
	*slots = append(*slots, slot)
	ev, err := o.submit(op.engine, []sasync.Event{after}, func() error {
		if op.before != nil {
			op.before()
		}
		if op.delay != nil {
			sleep(op.delay(op.n))
		}
		*slot = gather(nil, op.src, op.l)
		return nil
	}, use{op.v, subarena.Read})
	if err != nil {
		return err
	}
	*events = append(*events, ev)
	return nil
}

// holdUntil blocks until the compute engine has completed target ops, or
// the host has waited since the hold began.
func (o *Online) holdUntil(target sasync.Seq, epoch uint64) {
	o.hmu.Lock()
	for o.done < target && o.epoch == epoch {
		o.hcond.Wait()
	}
	o.hmu.Unlock()
}

// openHolds releases every consumer op held so far.
func (o *Online) openHolds() {
	o.hmu.Lock()
	o.epoch++
	o.hcond.Broadcast()
	o.hmu.Unlock()
}

// rowsLayout is the view of output t the consumer reads: the row of the
// last of tokens new tokens of each sequence of a [width, rows] tensor, or
// all of t.
func rowsLayout(t *C.struct_ggml_tensor, tokens int) (strided.Layout, error) {
	l, err := tensorLayout(t)
	if err != nil || tokens <= 0 {
		return l, err
	}
	T := int64(tokens)
	if l.Shape[0] != 1 || l.Shape[1] != 1 || l.Shape[2]%T != 0 {
		return l, fmt.Errorf("%w: output %q of shape %v has no rows of %d tokens", ErrGraph, tensorName(t), l.Shape, tokens)
	}
	return strided.Layout{
		Offset:  l.Offset + (T-1)*l.Strides[2],
		Shape:   []int64{l.Shape[2] / T, l.Shape[3]},
		Strides: []int64{T * l.Strides[2], l.Strides[3]},
		Elem:    l.Elem,
	}, nil
}

// gather appends the bytes l covers in src, element by element in
// row-major order of l's shape.
func gather(dst, src []byte, l strided.Layout) []byte {
	return gatherAt(dst, src, l.Offset, l.Shape, l.Strides, l.Elem)
}

func gatherAt(dst, src []byte, off int64, shape, strides []int64, elem int64) []byte {
	switch {
	case len(shape) == 0:
		return append(dst, src[off:off+elem]...)
	case len(shape) == 1 && strides[0] == elem:
		return append(dst, src[off:off+shape[0]*elem]...)
	}
	for i := range shape[0] {
		dst = gatherAt(dst, src, off+i*strides[0], shape[1:], strides[1:], elem)
	}
	return dst
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}

// submit queues fn on engine e after waits, then records every view it
// touches under its event: submit first, then Use (the Allocator accepts
// an event that has already completed).
func (o *Online) submit(e sasync.EngineID, waits []sasync.Event, fn func() error, uses ...use) (sasync.Event, error) {
	ev, err := o.x.Submit(e, waits, func(context.Context) error { return fn() })
	if err != nil {
		return ev, err
	}
	o.st.Ops++
	for _, u := range uses {
		if err := o.a.Use(u.v, ev, u.acc); err != nil {
			return ev, fmt.Errorf("use of %v by %v: %w", u.v, ev, err)
		}
	}
	return ev, o.check()
}

func (o *Online) check() error {
	if !o.opts.Check {
		return nil
	}
	return o.a.CheckInvariants()
}

// alloc returns a buffer of size bytes for a writer at the compute
// engine's next point. When nothing fits it releases held consumers, waits
// for the work the Allocator names (or for the last op of every engine
// with work in flight) until the Allocator has seen it complete, and
// retries (subarena.Allocator.AllocWaiting).
func (o *Online) alloc(size int64) (*subarena.Buffer, error) {
	b, err := o.a.AllocWaiting(size, o.compute, subarena.SpaceWait{
		Executor: o.x,
		Engines:  []sasync.EngineID{o.compute, o.copier, o.consumer},
		Stalled: func(attempt int) {
			if attempt == 0 {
				o.st.Stalls++
			}
			o.openHolds()
		},
	})
	if err != nil {
		return nil, err
	}
	o.st.Allocs++
	o.st.AllocBytes += ranges.Granule(o.opts.Granule).Up(size)
	return b, o.check()
}

// WaitCompute waits until the step's compute ops have run: the graph may
// then be freed or rebuilt. Held consumers stay held.
func (s *OnlineStep) WaitCompute() error {
	if s.lastCompute.IsZero() {
		return nil
	}
	return s.o.x.Wait(s.lastCompute)
}

// Wait releases held consumers and waits until every op of the step has
// run: Outputs and Offloads are then complete.
func (s *OnlineStep) Wait() error {
	s.o.openHolds()
	for _, evs := range [][]sasync.Event{{s.lastCompute}, s.copies, s.consumers} {
		for _, ev := range evs {
			if ev.IsZero() {
				continue
			}
			if err := s.o.x.Wait(ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush releases held consumers and waits until every op submitted so far
// has run on every engine: every step's Outputs and Offloads are
// complete, and resident tensors hold their final bytes.
func (o *Online) Flush() error {
	o.openHolds()
	for _, e := range []sasync.EngineID{o.compute, o.copier, o.consumer} {
		last := sasync.Event{Engine: e, Seq: o.tl.Submitted(e)}
		if last.IsZero() {
			continue
		}
		if err := o.x.Wait(last); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes, releases the resident tensors, stops the engines, checks
// that the Allocator holds nothing, and frees the arena, the ggml buffer
// and the backend. Resident tensors, and every tensor a step placed, point
// into freed memory afterwards.
func (o *Online) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	err := o.Flush()
	for _, r := range o.order {
		if rerr := o.a.Release(r.buf); rerr != nil && err == nil {
			err = rerr
		}
	}
	if xerr := o.x.Close(); err == nil {
		err = xerr
	}
	o.unsub()
	if err == nil {
		err = o.a.CheckInvariants()
	}
	if err == nil {
		st := o.a.Stats()
		if st.Live != 0 || st.Buffers != 0 || st.Users != 0 || st.Held != 0 || st.InUse != 0 {
			err = fmt.Errorf("%w: %d live bytes in %d buffers, %d users, %d held, %d in use at Close",
				ErrOnline, st.Live, st.Buffers, st.Users, st.Held, st.InUse)
		}
	}
	o.st.Arena = o.a.Stats()
	o.a.Close()
	o.freeC()
	return err
}

// readStep reads, from graph computed by other means (every tensor with
// memory of its own, or placed by ggml_gallocr), what a Step's engines
// read: per output node the consumer's rows, per write into a tensor of
// memory of its own through a view the copy engine's bytes. It is the
// reference an online run is compared with.
func readStep(graph unsafe.Pointer, tokens int) (outputs, offloads [][]byte, err error) {
	g := (*C.struct_ggml_cgraph)(graph)
	n := int(C.ggml_graph_n_nodes(g))
	isNode := make(map[*C.struct_ggml_tensor]bool, n)
	for i := range n {
		isNode[C.ggml_graph_node(g, C.int(i))] = true
	}
	bytesOf := func(t *C.struct_ggml_tensor) []byte {
		return unsafe.Slice((*byte)(t.data), int(C.ggml_nbytes(t)))
	}
	for i := range n {
		t := C.ggml_graph_node(g, C.int(i))
		if !computes(t) {
			continue
		}
		if base := t.view_src; base != nil && !isNode[base] && base.data != nil {
			l, err := tensorLayout(t)
			if err != nil {
				return nil, nil, err
			}
			offloads = append(offloads, gather(nil, bytesOf(base), l))
		}
		if t.flags&C.GGML_TENSOR_FLAG_OUTPUT != 0 && t.view_src == nil {
			l, err := rowsLayout(t, tokens)
			if err != nil {
				return nil, nil, err
			}
			outputs = append(outputs, gather(nil, bytesOf(t), l))
		}
	}
	return outputs, offloads, nil
}
