//go:build subarena_extggml

package main

/*
#include "shim.h"

static int sa_graph_nodes(void * g) { return ggml_graph_n_nodes((struct ggml_cgraph *) g); }
static const char * sa_ggml_version(void) { return ggml_version(); }
static size_t sa_alignment(void * buft) { return ggml_backend_buft_get_alignment((ggml_backend_buffer_type_t) buft); }
static size_t sa_max_size(void * buft) { return ggml_backend_buft_get_max_size((ggml_backend_buffer_type_t) buft); }
static const char * sa_buft_name(void * buft) { return ggml_backend_buft_name((ggml_backend_buffer_type_t) buft); }
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/subarena/subarena/integrations/ggml"
)

// ggmlVersion is the ggml version the library was built for (build.sh sets
// it with -ldflags -X); another version is served by ggml's own gallocr.
var ggmlVersion = ""

// callNames names the kinds of calls counted, in shim.h's order.
var callNames = [C.SA_CALL_KINDS]string{"reserve_n", "reserve_n_size", "alloc_graph", "get_buffer_size"}

// allocator is one gallocr handle of the shim's.
type allocator struct {
	id       int64
	a        *ggml.Allocator // nil when a real gallocr serves it
	nBufs    int
	buft     unsafe.Pointer // the buffer type (one-buffer allocators)
	bufType  string
	fallback string // why a real gallocr serves it, "" while it does not
	reserved bool   // a reserve_n or reserve_n_size call has been served
	freed    bool

	// stats
	calls              [C.SA_CALL_KINDS]int64
	cpuNs              [C.SA_CALL_KINDS]int64
	hits, misses       int64
	missesAfterReserve int64
	fallbacks          int64
	plannedAhead       bool // saWouldPlan planned the graph alloc_graph is about to place
	sizes              []int64
	gallocrSizes       []int64
	bound              int64
	planCPU            time.Duration
	hitNs, missNs      []int64 // CPU time of each alloc_graph call that placed a planned graph, and of the others
}

var (
	mu      sync.Mutex
	allocs  []*allocator // by id-1
	saidWhy = map[string]bool{}
	env     = readEnv()
)

type config struct {
	log      bool
	stats    string
	budget   time.Duration
	relayout bool
	// testFallback names a kind of call (reserve_n, alloc_graph) whose
	// first occurrence the Go side gives up, as it would one it cannot
	// serve: the tests' way to reach the fallback on a supported graph.
	testFallback string
}

func readEnv() config {
	c := config{log: os.Getenv("SUBARENA_GGML_LOG") == "1", stats: os.Getenv("SUBARENA_GGML_STATS"),
		relayout: os.Getenv("SUBARENA_GGML_RELAYOUT") == "1", testFallback: os.Getenv("SUBARENA_GGML_TEST_FALLBACK")}
	if b := os.Getenv("SUBARENA_GGML_BUDGET"); b != "" {
		d, err := time.ParseDuration(b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "subarena-ggml: SUBARENA_GGML_BUDGET=%q: %v; planning greedily\n", b, err)
		}
		c.budget = d
	}
	return c
}

// sayOnce writes msg on stderr the first time it is given.
func sayOnce(msg string) {
	if !saidWhy[msg] {
		saidWhy[msg] = true
		fmt.Fprintf(os.Stderr, "subarena-ggml: %s\n", msg)
	}
}

func get(id C.int64_t) *allocator {
	if id <= 0 || int(id) > len(allocs) {
		return nil
	}
	return allocs[id-1]
}

// guard turns a panic into a fallback of al (the host never sees it).
func guard(al *allocator, ret *C.int) {
	if r := recover(); r != nil {
		if al != nil {
			al.giveUp(fmt.Sprintf("internal error: %v\n%s", r, debug.Stack()))
		}
		if ret != nil {
			*ret = C.SA_FALLBACK
		}
	}
}

func (al *allocator) giveUp(why string) {
	if al.fallback == "" {
		al.fallback = why
		sayOnce(fmt.Sprintf("%s; ggml's gallocr serves this allocator", why))
	}
}

//export saNew
func saNew(bufts unsafe.Pointer, n, baseline C.int, supported *C.int) (id C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	al := &allocator{id: int64(len(allocs) + 1), nBufs: int(n)}
	allocs = append(allocs, al)
	id = C.int64_t(al.id)
	al.sizes, al.gallocrSizes = make([]int64, max(int(n), 0)), make([]int64, max(int(n), 0))
	defer guard(al, nil)
	types := unsafe.Slice((*unsafe.Pointer)(bufts), max(int(n), 0))
	if n >= 1 {
		al.bufType = C.GoString(C.sa_buft_name(types[0]))
	}
	switch v := C.GoString(C.sa_ggml_version()); {
	case baseline != 0:
		al.fallback = "SUBARENA_GGML=gallocr"
		return id
	case ggmlVersion != "" && v != ggmlVersion:
		al.giveUp(fmt.Sprintf("built for ggml %s, the process has ggml %s", ggmlVersion, v))
		return id
	case n != 1:
		al.giveUp(fmt.Sprintf("an allocator of %d buffer types is not supported yet", n))
		return id
	}
	a, err := ggml.New(ggml.Options{BufferType: types[0], NoRelayout: !env.relayout, Budget: env.budget, Name: "llama.cpp"})
	if err != nil {
		al.giveUp(err.Error())
		return id
	}
	al.a, al.buft = a, types[0]
	*supported = 1
	return id
}

//export saGiveUp
func saGiveUp(id C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil {
		al.giveUp("a call it could not serve")
	}
}

//export saFree
func saFree(id C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil {
		return
	}
	defer guard(al, nil)
	al.freed = true
	if al.a != nil {
		if al.fallback == "" {
			al.sizes[0] = al.a.BufferSize()
		}
		al.a.Free()
		al.a = nil
	}
}

//export saRealSizes
func saRealSizes(id C.int64_t, sizes *C.size_t, n C.int) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil {
		for i, s := range unsafe.Slice(sizes, int(n)) {
			if i < len(al.sizes) {
				al.sizes[i] = int64(s)
			}
		}
	}
}

//export saShadowSizes
func saShadowSizes(id C.int64_t, sizes *C.size_t, n C.int) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil {
		for i, s := range unsafe.Slice(sizes, int(n)) {
			if i < len(al.gallocrSizes) {
				al.gallocrSizes[i] = max(al.gallocrSizes[i], int64(s))
			}
		}
	}
}

//export saNote
func saNote(id C.int64_t, kind C.int, ns C.int64_t, forwarded, hit C.int) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil && kind >= 0 && kind < C.SA_CALL_KINDS {
		al.calls[kind]++
		al.cpuNs[kind] += int64(ns)
		if forwarded != 0 {
			al.fallbacks++
		}
		if kind == C.SA_CALL_ALLOC_GRAPH {
			if hit != 0 {
				al.hitNs = append(al.hitNs, int64(ns))
			} else {
				al.missNs = append(al.missNs, int64(ns))
			}
		}
	}
}

// checkIDs reports whether every buffer id is 0 (ids may be nil).
func checkIDs(graph unsafe.Pointer, nids, lids *C.int) bool {
	if nids == nil && lids == nil {
		return true
	}
	n := int(C.sa_graph_nodes(graph))
	if nids != nil {
		for _, b := range unsafe.Slice(nids, n) {
			if b != 0 {
				return false
			}
		}
	}
	// Leaf ids: the leaf count is private to ggml; a one-buffer allocator
	// gets only id 0 from the scheduler, which checkIDs' node pass confirms.
	return true
}

// plan plans graph (or finds its plan), checks it fits the buffer type, and
// logs it when asked to; it returns the plan's size.
func (al *allocator) plan(graph unsafe.Pointer, what string) (int64, error) {
	before := al.a.Stats().Plans
	start := time.Now()
	p, err := al.a.Plan(graph)
	if err != nil {
		return 0, err
	}
	if al.a.Stats().Plans > before {
		al.planCPU += time.Since(start)
		al.bound = max(al.bound, p.LowerBound)
		if env.log {
			al.logPlan(what, graph, p)
		}
	}
	return p.Size, nil
}

func (al *allocator) logPlan(what string, graph unsafe.Pointer, p *ggml.Plan) {
	fmt.Fprintf(os.Stderr, "subarena-ggml: allocator %d: %s: planned a graph of %d nodes: %d bytes (bound %d), buffer %d, read %v, plan %v\n",
		al.id, what, int(C.sa_graph_nodes(graph)), p.Size, p.LowerBound, max(al.a.BufferSize(), p.Size), p.Read, p.Planning)
}

func (al *allocator) fits(size int64) error {
	if m := int64(C.sa_max_size(al.buft)); m > 0 && size > m {
		return fmt.Errorf("a graph needs %d bytes, more than one %s buffer may hold (%d): chunked buffers are not supported yet", size, al.bufType, m)
	}
	return nil
}

//export saReserveN
func saReserveN(id C.int64_t, graph unsafe.Pointer, nids, lids *C.int) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil || al.a == nil || al.fallback != "" {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	if !checkIDs(graph, nids, lids) {
		al.giveUp("buffer ids other than 0 in a one-buffer allocator")
		return C.SA_FALLBACK
	}
	if env.testFallback == "reserve_n" {
		al.giveUp("SUBARENA_GGML_TEST_FALLBACK=reserve_n")
		return C.SA_FALLBACK
	}
	size, err := al.plan(graph, "reserve_n")
	if err == nil {
		err = al.fits(size)
	}
	if err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	al.reserved = true
	if err := al.a.Reserve(graph); err != nil {
		fmt.Fprintf(os.Stderr, "subarena-ggml: allocator %d: %v\n", al.id, err)
		return 0
	}
	al.sizes[0] = al.a.BufferSize()
	return 1
}

//export saReserveNSize
func saReserveNSize(id C.int64_t, graph unsafe.Pointer, nids, lids *C.int, sizes *C.size_t) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil || al.a == nil || al.fallback != "" {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	if !checkIDs(graph, nids, lids) {
		al.giveUp("buffer ids other than 0 in a one-buffer allocator")
		return C.SA_FALLBACK
	}
	size, err := al.plan(graph, "reserve_n_size")
	if err == nil {
		err = al.fits(size)
	}
	if err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	al.reserved = true
	out := unsafe.Slice(sizes, al.nBufs)
	// what reserve_n allocates for it: the Allocator's buffer is at least
	// one alignment unit
	out[0] = C.size_t(max(size, int64(C.sa_alignment(al.buft))))
	return 1
}

//export saWouldPlan
func saWouldPlan(id C.int64_t, graph unsafe.Pointer) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil || al.a == nil || al.fallback != "" {
		return 0
	}
	defer guard(al, &ret)
	before := al.a.Stats().Plans
	if _, err := al.plan(graph, "alloc_graph"); err != nil {
		return 0
	}
	if al.a.Stats().Plans > before {
		al.plannedAhead = true
		return 1
	}
	return 0
}

//export saAllocGraph
func saAllocGraph(id C.int64_t, graph unsafe.Pointer) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil || al.a == nil || al.fallback != "" {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	if env.testFallback == "alloc_graph" {
		al.giveUp("SUBARENA_GGML_TEST_FALLBACK=alloc_graph")
		return C.SA_FALLBACK
	}
	before := al.a.Stats()
	ahead := al.plannedAhead
	al.plannedAhead = false
	if err := al.a.AllocGraph(graph); err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	after := al.a.Stats()
	al.sizes[0] = al.a.BufferSize()
	if after.Misses > before.Misses && env.log {
		if p, err := al.a.Plan(graph); err == nil {
			al.logPlan("alloc_graph", graph, p)
		}
	}
	if after.Misses > before.Misses || ahead {
		al.misses++
		if al.reserved {
			al.missesAfterReserve++
		}
		return 2
	}
	al.hits++
	return 1
}

//export saBufferSize
func saBufferSize(id C.int64_t, buffer C.int) C.size_t {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if al == nil || al.a == nil || buffer != 0 {
		return 0
	}
	return C.size_t(al.a.BufferSize())
}

// allocatorStats is one allocator in the SUBARENA_GGML_STATS file.
type allocatorStats struct {
	ID                 int64            `json:"id"`
	BufferTypes        int              `json:"buffer_types"`
	BufferType         string           `json:"buffer_type"`
	Calls              map[string]int64 `json:"calls"`
	Hits               int64            `json:"hits"`
	Misses             int64            `json:"misses"`
	MissesAfterReserve int64            `json:"misses_after_reserve"`
	Fallbacks          int64            `json:"fallbacks"` // calls served by ggml's gallocr
	Fallback           string           `json:"fallback,omitempty"`
	Sizes              []int64          `json:"sizes"`
	GallocrSizes       []int64          `json:"gallocr_sizes"`
	Bound              int64            `json:"bound"`
	CPUNs              map[string]int64 `json:"cpu_ns"`
	PlanNs             int64            `json:"plan_ns"`
	// AllocGraphNs is the median thread CPU time of alloc_graph calls
	// that placed a graph without planning it (a plan-cache hit; under
	// ggml's gallocr, a call that did not reserve again), and of the others.
	AllocGraphNs struct {
		HitMedian  int64 `json:"hit_median"`
		Hits       int   `json:"hits"`
		MissMedian int64 `json:"miss_median"`
		Misses     int   `json:"misses"`
	} `json:"alloc_graph_ns"`
}

func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

//export saWriteStats
func saWriteStats() {
	mu.Lock()
	defer mu.Unlock()
	defer func() { _ = recover() }()
	if env.stats == "" {
		return
	}
	out := struct {
		Allocators []allocatorStats `json:"allocators"`
	}{Allocators: []allocatorStats{}}
	for _, al := range allocs {
		if al.a != nil && al.fallback == "" {
			al.sizes[0] = al.a.BufferSize()
		}
		s := allocatorStats{ID: al.id, BufferTypes: al.nBufs, BufferType: al.bufType, Calls: map[string]int64{},
			CPUNs: map[string]int64{}, Hits: al.hits, Misses: al.misses, MissesAfterReserve: al.missesAfterReserve,
			Fallbacks: al.fallbacks, Fallback: al.fallback, Sizes: al.sizes, GallocrSizes: al.gallocrSizes,
			Bound: al.bound, PlanNs: al.planCPU.Nanoseconds()}
		s.AllocGraphNs.HitMedian, s.AllocGraphNs.Hits = median(al.hitNs), len(al.hitNs)
		s.AllocGraphNs.MissMedian, s.AllocGraphNs.Misses = median(al.missNs), len(al.missNs)
		if al.hits+al.misses == 0 { // served by ggml's gallocr from the start
			s.Hits, s.Misses = int64(len(al.hitNs)), int64(len(al.missNs))
		}
		for k, name := range callNames {
			s.Calls[name] = al.calls[k]
			s.CPUNs[name] = al.cpuNs[k]
		}
		out.Allocators = append(out.Allocators, s)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err == nil {
		err = os.WriteFile(env.stats, append(b, '\n'), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "subarena-ggml: writing %s: %v\n", env.stats, err)
	}
}
