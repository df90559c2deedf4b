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
	"github.com/subarena/subarena/integrations/ggml/internal/cpubackend"
	"github.com/subarena/subarena/ranges"
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

	onlineEngines                                     // the Allocator and the three engines that share it
	onlineMemory                                      // the arena's C memory and the ggml objects over it
	onlineHolds                                       // held consumers, released as compute advances
	residents     map[*C.struct_ggml_tensor]*resident // adopted tensors, by tensor
	order         []*resident                         // the same, in the order adopted

	st     OnlineStats
	closed bool // set by Close; every later call fails with ErrOnline
}

// onlineEngines is the Allocator over the arena and the Timeline and
// Executor of its engines; set by NewOnline, never changed.
type onlineEngines struct {
	tl                        *sasync.Timeline
	x                         *sasync.Executor
	a                         *subarena.Allocator
	compute, copier, consumer sasync.EngineID
}

// onlineMemory is the C side: the arena's memory wrapped as one ggml CPU
// buffer, the backend that computes into it, and the one-node graph it
// computes. Allocated by NewOnline, freed by freeC.
type onlineMemory struct {
	mem  unsafe.Pointer // the arena's C memory
	size int64
	buf  C.ggml_backend_buffer_t
	be   *cpubackend.Backend // the release's CPU backend, on a pool of its own
	gctx *C.struct_ggml_context
	g1   *C.struct_ggml_cgraph // the one-node graph, used by the compute engine only
}

// onlineHolds is the hold state: guarded by hmu.
type onlineHolds struct {
	hmu       sync.Mutex
	hcond     sync.Cond
	done      sasync.Seq // compute ops completed
	epoch     uint64     // bumped whenever the host waits: releases every hold
	unsub     func()
	nCopies   int // copy ops submitted (for CopyDelay)
	nConsumed int // consumer ops submitted (for ConsumerDelay)
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
	o := &Online{opts: opts, onlineEngines: onlineEngines{tl: sasync.NewTimeline()}, residents: map[*C.struct_ggml_tensor]*resident{}}
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
	o.gctx = C.sa_online_ctx()
	if o.buf == nil || o.gctx == nil {
		o.freeC()
		return nil, fmt.Errorf("%w: ggml could not make the buffer or graph", ErrAlloc)
	}
	// Workers sleep between nodes instead of polling: the host and the
	// other engines share the cores with them.
	if o.be, err = cpubackend.New(opts.Threads, true); err != nil {
		o.freeC()
		return nil, fmt.Errorf("%w: %w", ErrAlloc, err)
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
	o.be.Free()
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
