package ggml

/*
#include "sa_ggml.h"

static ggml_backend_buffer_t sa_buffer_new(ggml_backend_buffer_type_t buft, void * ptr, size_t size) {
    ggml_backend_buffer_t b;
    if (ptr != NULL) {
        b = ggml_backend_cpu_buffer_from_ptr(ptr, size);
    } else {
        b = ggml_backend_buft_alloc_buffer(buft, size);
    }
    if (b != NULL) {
        ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    }
    return b;
}
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/plan"
)

// ErrAlloc reports a buffer ggml could not allocate or a tensor it could not
// place.
var ErrAlloc = errors.New("ggml: allocation failed")

var errFreed = fmt.Errorf("%w: the Allocator was freed", ErrAlloc)

// DefaultCacheSize is the number of graph plans an Allocator keeps when
// Options.CacheSize is zero.
const DefaultCacheSize = 16

// Options tunes an Allocator. The zero value is the drop-in: ggml's CPU
// backend, one buffer of C memory, offsets and verified strided placements,
// greedy planning, 16 cached plans.
type Options struct {
	// BufferType is the ggml_backend_buffer_type_t to allocate the buffer
	// from (ggml_backend_buft_alloc_buffer). Nil means CPU memory the
	// Allocator maps itself and hands to ggml_backend_cpu_buffer_from_ptr.
	BufferType unsafe.Pointer
	// NoRelayout keeps every tensor at an offset: no in-place output over a
	// strided input (plan.Options.NoRelayout). It is implied for a buffer
	// type other than the CPU's: the kernels verified on relaid layouts are
	// the CPU backend's.
	NoRelayout bool
	// NoInPlace gives every tensor bytes of its own until they die
	// (plan.Options.NoInPlace).
	NoInPlace bool
	// GGMLInPlace keeps in-place outputs to ggml's own rule
	// (ggml_op_can_inplace), without the kernels verified beyond it on the
	// CPU buffer type (package kernels; see inplace.go).
	GGMLInPlace bool
	// Budget is the time each new plan of Reserve or Plan (or of
	// AllocGraph before the buffer exists) may spend searching below the
	// greedy placement (plan.Options.Budget): the graphs that size the
	// buffer. A graph AllocGraph plans once the buffer exists only has to
	// fit: its first plan when that fits, else the planner greedily (see
	// "The first plan" in the package documentation). Zero plans every
	// graph greedily.
	Budget time.Duration
	// Check runs the full safety check (check.Plan, package trace/check)
	// on every new plan before it is used, and fails the call if the
	// checker rejects it (plan.Options.Check). The planner's plans pass it
	// by construction, so production callers leave it off: the check is
	// O(R log R) in the byte runs of the graph's uses and allocates, about
	// six times the plan's time on ggml-tiny (see plan.Options.Check for
	// the figures). Tests turn it on; a build with the invariants tag runs
	// it on every plan whatever Check says.
	Check bool
	// CacheSize is the number of plans kept, keyed by graph topology
	// (DefaultCacheSize when zero, no cache when negative).
	CacheSize int
	// Name names the traces of the graphs read ("ggml-graph" when empty).
	Name string
	// Reorder lets AllocGraph reorder a graph's nodes, as ReorderGraph
	// does, before placing it: the order is decided once per graph
	// topology (and cached with the plans), then every graph of that
	// topology is permuted to it (an order that keeps every node after
	// those it reads is one for every graph of the topology) and placed
	// with the reordered graph's plan. Plan and Reserve plan the graph in that order and leave it in
	// its own.
	Reorder bool
}

// Plan is what the Allocator decided for one graph structure.
type Plan struct {
	// Trace is the graph read as a trace; Result is the planner's answer
	// for it (Result.Plan places every tensor the Allocator owns).
	Trace  *trace.Trace
	Result plan.Result
	// Size is the bytes the graph needs in the buffer.
	Size int64
	// LowerBound is the planner's lower bound for Size under its in-place
	// choices (0 when unknown).
	LowerBound int64
	// Relaid names the tensors laid over a strided footprint of another,
	// with their strides changed accordingly.
	Relaid []string
	// OutOfPlace names ops the planner laid in place but whose kernels are
	// not verified on the layout it chose; they run out of place.
	OutOfPlace []string
	// Read is the time taken to read the graph into a trace, Planning the
	// planner's time (verification rounds included), FirstPlan the first
	// plan's (see the package documentation, "The first plan"): the whole
	// of Planning for a OnePass plan that no planner followed, and for a
	// plan of Plan or Reserve with the scan of the graph included, as
	// FirstPlan's is.
	Read, Planning, FirstPlan time.Duration
	// OnePass says the placement is the first plan's: a plan of FirstPlan,
	// of a graph AllocGraph planned once the buffer existed, whose first
	// plan fit it (Trace and Result are then empty: the planner did not
	// run), or a graph whose first plan was lower than the planner's
	// (Trace and Result are then the planner's, for comparison; Relaid and
	// LowerBound are empty).
	OnePass bool
}

// Stats counts an Allocator's work.
type Stats struct {
	// Hits and Misses count AllocGraph calls that found their plan in the
	// cache and that planned.
	Hits, Misses int
	// Plans counts plans made (Reserve and Plan included); Grows counts
	// buffer reallocations.
	Plans, Grows int
	// FirstPlans counts the misses placed with their first plan alone
	// (the buffer existed and the plan fit it; see "The first plan" in the
	// package documentation).
	FirstPlans int
}

// entry is one cached plan: the topology of the graph planned, its dims
// (sa_dims), the plan's in-place pairs (sa_pairs) and the placement of
// every scan record.
type entry struct {
	structure
	dims    []int64
	pairs   []int32
	place   []C.sa_place
	nRelaid int32
	plan    *Plan
	used    uint64
}

// fits reports whether the graph just scanned, of e's topology, fits e's
// plan (sa_fit).
func (a *Allocator) fits(e *entry) bool {
	return C.sa_fit(a.sc.s, dimsPtr(e.dims), pairsPtr(e.pairs), C.int32_t(len(e.pairs)/3), placePtr(e.place), C.int32_t(e.n)) == 1
}

// same reports whether the graph just scanned is e's graph: its topology
// with the same dims.
func (a *Allocator) same(e *entry) bool {
	if !a.sc.has(&e.structure) {
		return false
	}
	d := a.sc.dims()
	return slices.Equal(d, e.dims)
}

// Allocator is the drop-in for ggml_gallocr: it plans a graph offline with
// subarena's planner, places every graph that plan covers (the same
// topology, tensors no larger) with it, and places graphs into one backend
// buffer. It is safe for concurrent use, but ggml graphs are not: allocate a
// graph from one goroutine at a time and compute it after AllocGraph
// returns.
type Allocator struct {
	mu    sync.Mutex
	opts  Options
	buft  unsafe.Pointer
	align int64
	rule  inplaceRule // cpuRule on ggml's CPU buffer type, else ggmlRule
	sc    *scanner
	arena unsafe.Pointer
	size  int64
	buf   C.ggml_backend_buffer_t
	cache map[uint64][]*entry // by topology hash
	last  *entry
	// entries counts the plans in cache
	entries int
	// orders caches, by the structure of a graph as built, the node order
	// Options.Reorder gives it (osc scans graphs for it).
	orders map[uint64]*order
	osc    *scanner
	clock  uint64
	stats  Stats
	// scratch is the planner's memory, reused from plan to plan; prog is
	// the last plan's resolved trace, whose memory the next one reuses.
	scratch plan.Scratch
	prog    *trace.Program
	pairBuf []int32 // sa_pairs' scratch (pairs)
}

// New returns an Allocator with no buffer yet; the first Reserve or
// AllocGraph allocates it.
func New(opts Options) (*Allocator, error) {
	sc, buft, err := newScannerFor(opts.BufferType)
	if err != nil {
		return nil, err
	}
	a := &Allocator{opts: opts, buft: buft, align: bufferAlignment(buft), sc: sc, cache: map[uint64][]*entry{}}
	if buft == cpuBufferType() && !opts.GGMLInPlace {
		a.rule = cpuRule
	}
	if buft != cpuBufferType() {
		// the kernels verified on relaid layouts, and in place beyond
		// ggml's list, are the CPU backend's
		a.opts.NoRelayout = true
	}
	if a.opts.CacheSize == 0 {
		a.opts.CacheSize = DefaultCacheSize
	}
	return a, nil
}

// Free releases the buffer and the Allocator's C state. Tensors placed by it
// point into freed memory afterwards.
func (a *Allocator) Free() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return
	}
	a.freeBuffer()
	a.setLast(nil)
	a.sc.free()
	if a.osc != nil {
		a.osc.free()
	}
	a.cache, a.last, a.orders, a.entries = nil, nil, nil, 0
	a.prog = nil
}

func (a *Allocator) freeBuffer() {
	freeArenaBuffer(&a.buf, &a.arena, a.size)
	a.size = 0
	if a.sc.s != nil {
		a.sc.s.buffer = nil
	}
}

// freeArenaBuffer frees *buf, a ggml buffer over arena memory, and then the
// arena memory *mem of size bytes, each when set, and clears both.
func freeArenaBuffer(buf *C.ggml_backend_buffer_t, mem *unsafe.Pointer, size int64) {
	if *buf != nil {
		C.ggml_backend_buffer_free(*buf)
		*buf = nil
	}
	if *mem != nil {
		C.sa_arena_free(*mem, C.size_t(size))
		*mem = nil
	}
}

// grow makes the buffer at least size bytes.
func (a *Allocator) grow(size int64) error {
	size = max(size, a.align)
	if a.buf != nil && a.size >= size {
		return nil
	}
	if a.buf != nil {
		a.stats.Grows++
	}
	a.freeBuffer()
	var ptr unsafe.Pointer
	if a.opts.BufferType == nil {
		ptr = C.sa_arena_alloc(C.size_t(size))
		if ptr == nil {
			return fmt.Errorf("%w: no memory for a %d-byte arena", ErrAlloc, size)
		}
	}
	buf := C.sa_buffer_new(C.ggml_backend_buffer_type_t(a.buft), ptr, C.size_t(size))
	if buf == nil {
		if ptr != nil {
			C.sa_arena_free(ptr, C.size_t(size))
		}
		return fmt.Errorf("%w: ggml allocated no %d-byte buffer", ErrAlloc, size)
	}
	a.arena, a.buf, a.size = ptr, buf, size
	a.sc.s.buffer = buf
	return nil
}

// BufferSize returns the size of the buffer in bytes (0 before the first
// allocation), as ggml_gallocr_get_buffer_size does.
func (a *Allocator) BufferSize() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.size
}

// Buffer returns the ggml_backend_buffer_t the graphs are placed in (nil
// before the first allocation).
func (a *Allocator) Buffer() unsafe.Pointer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return unsafe.Pointer(a.buf)
}

// Stats returns the Allocator's counters.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Exclude makes tensors (each a struct ggml_tensor *) external to the
// Allocator in every call that follows, until the next Exclude: it neither
// places them nor their views, as if they had data, while the graph's ops
// that read and write them still order its own tensors' lifetimes. This
// is how the several buffer ids of one ggml_gallocr_new_n are served: one
// Allocator per buffer type, each excluding the tensors the others place.
// Nil or empty clears the set. The plans cached stay valid: the excluded
// tensors are part of a graph's structure.
func (a *Allocator) Exclude(tensors []unsafe.Pointer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return errFreed
	}
	var p **C.struct_ggml_tensor
	if len(tensors) > 0 {
		p = (**C.struct_ggml_tensor)(unsafe.Pointer(&tensors[0]))
	}
	if C.sa_exclude(a.sc.s, p, C.int32_t(len(tensors))) != 0 {
		return fmt.Errorf("%w: no memory for %d excluded tensors", ErrAlloc, len(tensors))
	}
	return nil
}

// AllocGraph places every tensor of graph (a struct ggml_cgraph *) that has
// no data yet, as ggml_gallocr_alloc_graph does: own tensors with
// ggml_backend_tensor_alloc, views with ggml_backend_view_init. A graph that
// a cached plan covers (Covers: the plan's topology, every tensor fitting
// its slot) is placed with that plan in one pass over its tensors, planning
// nothing; another is planned first (once the buffer exists, with its
// first plan when that fits the buffer), and the buffer grows when it needs
// more. Inputs
// (ggml_set_input) can be written after AllocGraph returns; outputs
// (ggml_set_output) are never overwritten by the graph.
func (a *Allocator) AllocGraph(graph unsafe.Pointer) error {
	if graph == nil {
		return fmt.Errorf("%w: nil graph", ErrGraph)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	placed, err := a.placeCached(graph)
	if err != nil || placed {
		return err
	}
	if e := a.lookup(); e != nil { // planned, but larger than the buffer
		a.stats.Hits++
		return a.place(e)
	}
	a.stats.Misses++
	// Once the buffer exists, a graph only has to fit it: the first plan
	// when it does, else the planner (greedily) beside it.
	var first *entry
	if a.buf != nil {
		var err error
		if first, err = a.firstPlan(); err != nil {
			return err
		}
		if first.plan.Size <= a.size {
			a.stats.Plans++
			a.stats.FirstPlans++
			a.insert(first)
			return a.place(first)
		}
	}
	e, err := a.planScanned(a.buf == nil, first)
	if err != nil {
		return err
	}
	return a.place(e)
}

// AllocCached places graph as AllocGraph does when a cached plan covers it
// (a hit), and otherwise leaves it alone and reports false, planning
// nothing.
func (a *Allocator) AllocCached(graph unsafe.Pointer) (bool, error) {
	if graph == nil {
		return false, fmt.Errorf("%w: nil graph", ErrGraph)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.placeCached(graph)
}

// placeCached is AllocCached with a.mu held: the graph reordered as
// Options.Reorder asks, then placed with a cached plan that covers it.
func (a *Allocator) placeCached(graph unsafe.Pointer) (bool, error) {
	if a.sc.s == nil {
		return false, errFreed
	}
	if a.opts.Reorder {
		if _, err := a.reorder(graph); err != nil {
			return false, err
		}
	}
	return a.allocCached(graph)
}

// allocCached places graph with a cached plan that covers it and reports
// whether it did; the graph is then in the scanner either way. The last
// plan placed is tried first, on the last graph's scan records when the
// graph was rebuilt in the same memory (sa_hit), then every plan of the
// graph's topology, newest first.
func (a *Allocator) allocCached(graph unsafe.Pointer) (bool, error) {
	g := (*C.struct_ggml_cgraph)(graph)
	tried := (*entry)(nil)
	if e := a.last; e != nil && a.buf != nil {
		switch C.sa_hit(a.sc.s, g, keyPtr(e.key), C.int64_t(len(e.key)), dimsPtr(e.dims), pairsPtr(e.pairs),
			C.int32_t(len(e.pairs)/3), placePtr(e.place), C.int32_t(e.n), C.int32_t(e.nRelaid)) {
		case 1:
			a.stats.Hits++
			a.clock++
			e.used = a.clock
			return true, nil
		case 2:
			tried = e
		case -1:
			return false, fmt.Errorf("%w: placing a cached plan", ErrAlloc)
		}
	} else if err := a.sc.scan(graph); err != nil {
		return false, err
	}
	if a.buf == nil {
		return false, nil
	}
	for _, e := range a.candidates() {
		if e != tried && e.plan.Size <= a.size && a.fits(e) {
			a.stats.Hits++
			return true, a.place(e)
		}
	}
	return false, nil
}

// candidates returns the cached plans of the scanned graph's topology,
// most recently used first.
func (a *Allocator) candidates() []*entry {
	es := a.cache[a.sc.keyHash()]
	out := es[:0:0]
	for _, e := range es {
		if a.sc.has(&e.structure) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y *entry) int { return cmp.Compare(y.used, x.used) })
	return out
}

// place places the scanned graph with e's plan.
func (a *Allocator) place(e *entry) error {
	if err := a.grow(e.plan.Size); err != nil {
		return err
	}
	if r := C.sa_apply(a.sc.s, placePtr(e.place), C.int32_t(e.n), C.int32_t(e.nRelaid)); r != 0 {
		return a.applyErr(int(r))
	}
	a.clock++
	e.used = a.clock
	if a.opts.CacheSize >= 0 {
		a.setLast(e)
	}
	return nil
}

// setLast makes e (nil: none) the plan AllocGraph tries first, and keeps
// a copy of it in C for HitState's callers.
func (a *Allocator) setLast(e *entry) {
	if a.last == e {
		return
	}
	a.last = e
	if e == nil || C.sa_set_last(a.sc.s, keyPtr(e.key), C.int64_t(len(e.key)), dimsPtr(e.dims), pairsPtr(e.pairs),
		C.int32_t(len(e.pairs)/3), placePtr(e.place), C.int32_t(e.n), C.int32_t(e.nRelaid)) != 0 {
		C.sa_set_last(a.sc.s, nil, 0, nil, nil, 0, nil, 0, 0)
	}
}

// HitState returns the C state (an sa_state *, see sa_ggml.h) whose
// sa_hit_last places a graph with the plan AllocGraph placed last, when
// it covers the graph, as AllocGraph would on a hit (and resets the buffer
// first, as ggml_gallocr_alloc_graph does): a C host's plan-cache hit with
// no call into Go. It is nil for an Allocator that reorders graphs
// (Options.Reorder) or caches no plans. The state lives until Free; its
// calls must not run concurrently with the Allocator's.
func (a *Allocator) HitState() unsafe.Pointer {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.Reorder || a.opts.CacheSize < 0 || a.sc.s == nil {
		return nil
	}
	return unsafe.Pointer(a.sc.s)
}

// Reserve plans graph and grows the buffer to what it needs, without
// placing it, as ggml_gallocr_reserve does: reserve with the largest graph
// to allocate the buffer once. The plan is cached, and AllocGraph places
// with it every graph it covers (see Covers).
func (a *Allocator) Reserve(graph unsafe.Pointer) error {
	p, err := a.Plan(graph)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return errFreed
	}
	return a.grow(p.Size)
}

// Plan returns the plan for graph itself (its topology and sizes, not a
// larger graph's plan that covers it), planning it if the cache does not
// hold it; it touches neither the graph nor the buffer. The Plan is
// shared with the cache: do not modify it.
func (a *Allocator) Plan(graph unsafe.Pointer) (p *Plan, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return nil, errFreed
	}
	if a.opts.Reorder {
		nodes, oerr := a.reorder(graph)
		if oerr != nil {
			return nil, oerr
		}
		if nodes != nil {
			// The graph goes back to its own order however planning ends; a
			// failure to restore it fails the call.
			defer func() {
				if rerr := permuteNodes((*C.struct_ggml_cgraph)(graph), inverse(nodes)); rerr != nil && err == nil {
					p, err = nil, rerr
				}
			}()
		}
	}
	start := time.Now()
	if err := a.sc.scan(graph); err != nil {
		return nil, err
	}
	read := time.Since(start)
	var first *entry
	if e := a.lookup(); e != nil {
		if e.plan.Trace != nil {
			return e.plan, nil
		}
		// a first plan alone (AllocGraph's): the planner runs beside it
		a.remove(e)
		first = e
	}
	e, err := a.planScanned(true, first)
	if err != nil {
		return nil, err
	}
	e.plan.FirstPlan += read
	return e.plan, nil
}

func (a *Allocator) applyErr(r int) error {
	recs := a.sc.recs()
	if r-1 < len(recs) {
		t := recs[r-1].t
		return fmt.Errorf("%w: tensor %q", ErrAlloc, C.GoString(&t.name[0]))
	}
	return fmt.Errorf("%w: the plan does not fit the graph", ErrAlloc)
}

// lookup returns the cached plan of the scanned graph itself, or nil.
func (a *Allocator) lookup() *entry {
	for _, e := range a.cache[a.sc.keyHash()] {
		if a.same(e) {
			return e
		}
	}
	return nil
}

// Covers reports whether a cached plan covers graph, so that AllocGraph
// would place it without planning, given a buffer of that plan's size:
// graph has the topology of a planned graph (the same nodes, ops, links,
// views, types and flags) and every tensor of the Allocator's fits that
// plan's slot for it (see the package documentation, "Dominated graphs").
// It plans nothing and touches neither the graph nor the buffer.
func (a *Allocator) Covers(graph unsafe.Pointer) (bool, error) {
	if graph == nil {
		return false, fmt.Errorf("%w: nil graph", ErrGraph)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return false, errFreed
	}
	if err := a.sc.scan(graph); err != nil {
		return false, err
	}
	for _, e := range a.candidates() {
		if a.fits(e) {
			return true, nil
		}
	}
	return false, nil
}
