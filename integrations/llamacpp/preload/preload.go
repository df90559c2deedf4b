//go:build subarena_extggml

package main

/*
#cgo CPPFLAGS: -I${SRCDIR}/../../ggml/.release/llama.cpp/ggml/include -I${SRCDIR}/../../ggml/.release/llama.cpp/ggml/src
#include "shim.h"
#include "ggml-impl.h" // struct ggml_cgraph: the leaves, for leaf_buffer_ids

static int sa_graph_leafs(void * g) { return ((struct ggml_cgraph *) g)->n_leafs; }
static void * sa_graph_leaf(void * g, int i) { return ((struct ggml_cgraph *) g)->leafs[i]; }
static void * sa_graph_node(void * g, int i) { return ggml_graph_node((struct ggml_cgraph *) g, i); }
static void sa_buffer_reset(void * b) { if (b != NULL) ggml_backend_buffer_reset((ggml_backend_buffer_t) b); }

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
	"path/filepath"
	"slices"
	"time"
	"unsafe"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/llamacpp"
	"github.com/subarena/subarena/trace"
)

//export saNew
func saNew(bufts unsafe.Pointer, n, baseline C.int, supported *C.int) (id C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	al := &allocator{id: int64(len(allocs) + 1), nBufs: int(n)}
	allocs = append(allocs, al)
	id = C.int64_t(al.id)
	al.sizes, al.gallocrSizes = make([]int64, max(int(n), 0)), make([]int64, max(int(n), 0))
	al.gallocrReadSizes = make([]int64, max(int(n), 0))
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
	case n < 1 || n > C.SA_MAX_BUFS:
		al.giveUp(fmt.Sprintf("an allocator of %d buffer types is not supported", n))
		return id
	}
	al.groupOf = make([]int, n)
	for i, bt := range types {
		g := slices.IndexFunc(al.groups, func(g *group) bool { return g.buft == bt })
		if g < 0 {
			a, err := ggml.New(ggml.Options{BufferType: bt, NoRelayout: !env.relayout, GGMLInPlace: env.ggmlOnly,
				Budget: env.budget, Check: env.check, Name: "llama.cpp"})
			if err != nil {
				al.freeGroups()
				al.giveUp(err.Error())
				return id
			}
			g = len(al.groups)
			al.groups = append(al.groups, &group{a: a, buft: bt})
		}
		al.groups[g].ids = append(al.groups[g].ids, i)
		al.groupOf[i] = g
	}
	al.bound = make([]int64, len(al.groups))
	*supported = 1
	return id
}

func (al *allocator) freeGroups() {
	for _, g := range al.groups {
		g.a.Free()
	}
	al.groups = nil
}

// served reports whether the Go side serves al.
func (al *allocator) served() bool { return al != nil && al.groups != nil && al.fallback == "" }

// updateSizes records each buffer id's size: a group's buffer at its first
// id, 0 at the others (as ggml_gallocr_get_buffer_size says).
func (al *allocator) updateSizes() {
	for _, g := range al.groups {
		for k, id := range g.ids {
			if k == 0 {
				al.sizes[id] = g.a.BufferSize()
			} else {
				al.sizes[id] = 0
			}
		}
	}
}

// exclude tells each group which tensors the others place, from the buffer
// ids (nil ids: all 0). With one group it does nothing.
func (al *allocator) exclude(graph unsafe.Pointer, nids, lids []int32) error {
	if len(al.groups) == 1 {
		return nil
	}
	others := make([][]unsafe.Pointer, len(al.groups))
	add := func(t unsafe.Pointer, id int32) {
		owner := 0
		if id >= 0 && int(id) < len(al.groupOf) {
			owner = al.groupOf[id]
		}
		for g := range others {
			if g != owner {
				others[g] = append(others[g], t)
			}
		}
	}
	for i := range int(C.sa_graph_nodes(graph)) {
		id := int32(0)
		if nids != nil {
			id = nids[i]
		}
		add(C.sa_graph_node(graph, C.int(i)), id)
	}
	for i := range int(C.sa_graph_leafs(graph)) {
		id := int32(0)
		if lids != nil {
			id = lids[i]
		}
		add(C.sa_graph_leaf(graph, C.int(i)), id)
	}
	for g, grp := range al.groups {
		if err := grp.a.Exclude(others[g]); err != nil {
			return err
		}
	}
	return nil
}

// ids copies the buffer ids of a reserve call (nil stays nil).
func ids(graph unsafe.Pointer, nids, lids *C.int) (nodes, leafs []int32) {
	if nids != nil {
		nodes = make([]int32, int(C.sa_graph_nodes(graph)))
		for i, v := range unsafe.Slice(nids, len(nodes)) {
			nodes[i] = int32(v)
		}
	}
	if lids != nil {
		leafs = make([]int32, int(C.sa_graph_leafs(graph)))
		for i, v := range unsafe.Slice(lids, len(leafs)) {
			leafs[i] = int32(v)
		}
	}
	return nodes, leafs
}

// checkIDs reports a buffer id out of range.
func (al *allocator) checkIDs(nodes, leafs []int32) error {
	for _, list := range [][]int32{nodes, leafs} {
		for _, id := range list {
			if id < 0 || int(id) >= al.nBufs {
				return fmt.Errorf("buffer id %d of an allocator of %d buffer types", id, al.nBufs)
			}
		}
	}
	return nil
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
	if al.served() {
		al.updateSizes()
	}
	al.freeGroups()
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

// saShadowSizes records the sizes a shadow gallocr reserves for a graph:
// ggml's (readOnly 0, with ns the wall time its reserve_n_size took), or
// ggml's with the leaves no node reads left out.
//
//export saShadowSizes
func saShadowSizes(id C.int64_t, sizes *C.size_t, n, readOnly C.int, ns C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil {
		to := al.gallocrSizes
		if readOnly != 0 {
			to = al.gallocrReadSizes
		} else {
			al.shadowNs = time.Duration(ns)
		}
		for i, s := range unsafe.Slice(sizes, int(n)) {
			if i < len(to) {
				to[i] = max(to[i], int64(s))
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

// plan plans graph for every group (or finds its plans), checks each fits
// its buffer type, and logs new plans when asked to; it returns each
// group's plan size. The groups' exclusions must be set.
func (al *allocator) plan(graph unsafe.Pointer, what string) ([]int64, error) {
	sizes := make([]int64, len(al.groups))
	for gi, g := range al.groups {
		before := g.a.Stats().Plans
		start := time.Now()
		p, err := g.a.Plan(graph)
		if err != nil {
			return nil, err
		}
		if g.a.Stats().Plans > before {
			al.planCPU += time.Since(start)
			al.bound[gi] = max(al.bound[gi], p.LowerBound)
			if env.log {
				al.logPlan(what, graph, g, p)
			}
			al.notePlan(p.FirstPlan)
			if env.dump != "" {
				al.dumpPlan(g, p)
			}
		}
		if m := int64(C.sa_max_size(g.buft)); m > 0 && p.Size > m {
			return nil, fmt.Errorf("a graph needs %d bytes, more than one %s buffer may hold (%d): chunked buffers are not supported yet",
				p.Size, C.GoString(C.sa_buft_name(g.buft)), m)
		}
		sizes[gi] = p.Size
	}
	return sizes, nil
}

// dumpPlan writes p's trace to SUBARENA_GGML_DUMP as
// a<allocator>-b<buffer id>-<n>.json, n counting the allocator's plans.
func (al *allocator) dumpPlan(g *group, p *ggml.Plan) {
	al.dumped++
	name := filepath.Join(env.dump, fmt.Sprintf("a%d-b%d-%d.json", al.id, g.ids[0], al.dumped))
	f, err := os.Create(name)
	if err == nil {
		err = trace.Write(f, p.Trace)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		sayOnce(fmt.Sprintf("SUBARENA_GGML_DUMP: %v", err))
	}
}

func (al *allocator) logPlan(what string, graph unsafe.Pointer, g *group, p *ggml.Plan) {
	fmt.Fprintf(os.Stderr, "subarena-ggml: allocator %d: %s: planned a graph of %d nodes for %s buffer %d: %d bytes (bound %d), buffer %d, first plan %v (gallocr's reserve %v), read %v, plan %v\n",
		al.id, what, int(C.sa_graph_nodes(graph)), C.GoString(C.sa_buft_name(g.buft)), g.ids[0], p.Size, p.LowerBound,
		max(g.a.BufferSize(), p.Size), p.FirstPlan, al.shadowNs, p.Read, p.Planning)
}

// prepare checks and records the buffer ids of a reserve call, sets the
// groups' exclusions and plans the graph; it returns each group's size.
func (al *allocator) prepare(graph unsafe.Pointer, nids, lids *C.int, what string) ([]int64, error) {
	nodes, leafs := ids(graph, nids, lids)
	if err := al.checkIDs(nodes, leafs); err != nil {
		return nil, err
	}
	if len(al.groups) > 1 {
		al.nodeIDs, al.leafIDs = nodes, leafs
	}
	if err := al.exclude(graph, nodes, leafs); err != nil {
		return nil, err
	}
	return al.plan(graph, what)
}

//export saReserveN
func saReserveN(id C.int64_t, graph unsafe.Pointer, nids, lids *C.int) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	if env.testFallback == "reserve_n" {
		al.giveUp("SUBARENA_GGML_TEST_FALLBACK=reserve_n")
		return C.SA_FALLBACK
	}
	if _, err := al.prepare(graph, nids, lids, "reserve_n"); err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	al.reserved = true
	for _, g := range al.groups {
		if err := g.a.Reserve(graph); err != nil {
			fmt.Fprintf(os.Stderr, "subarena-ggml: allocator %d: %v\n", al.id, err)
			return 0
		}
	}
	al.updateSizes()
	return 1
}

//export saReserveNSize
func saReserveNSize(id C.int64_t, graph unsafe.Pointer, nids, lids *C.int, sizes *C.size_t) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	planned, err := al.prepare(graph, nids, lids, "reserve_n_size")
	if err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	al.reserved = true
	// What reserve_n allocates for the graph: the Allocator's buffer is at
	// least one alignment unit. Every id of a group reports the group's
	// buffer, as gallocr's reserve_n_size does for a buffer type used twice.
	out := unsafe.Slice(sizes, al.nBufs)
	for gi, g := range al.groups {
		for _, id := range g.ids {
			out[id] = C.size_t(max(planned[gi], int64(C.sa_alignment(g.buft))))
		}
	}
	return 1
}

// placeable reports whether alloc_graph can place graph: with several
// groups, only a graph of the last reserve_n's node and leaf counts (whose
// buffer ids it reuses), as gallocr's alloc_graph returns false otherwise
// and the scheduler calls reserve_n again.
func (al *allocator) placeable(graph unsafe.Pointer) bool {
	if len(al.groups) == 1 {
		return true
	}
	return (al.nodeIDs == nil || len(al.nodeIDs) == int(C.sa_graph_nodes(graph))) &&
		(al.leafIDs == nil || len(al.leafIDs) == int(C.sa_graph_leafs(graph))) && al.reserved
}

//export saWouldPlan
func saWouldPlan(id C.int64_t, graph unsafe.Pointer) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() || !al.placeable(graph) {
		return 0
	}
	defer guard(al, &ret)
	if len(al.groups) == 1 {
		// alloc_graph plans it itself, greedily (the budget is the
		// reserves'), unless a plan covers it
		if ok, err := al.groups[0].a.Covers(graph); err == nil && !ok {
			return 1
		}
		return 0
	}
	if al.exclude(graph, al.nodeIDs, al.leafIDs) != nil {
		return 0
	}
	before := al.plans()
	if _, err := al.plan(graph, "alloc_graph"); err != nil {
		return 0
	}
	if al.plans() > before {
		al.plannedAhead = true
		return 1
	}
	return 0
}

func (al *allocator) plans() int {
	n := 0
	for _, g := range al.groups {
		n += g.a.Stats().Plans
	}
	return n
}

func (al *allocator) groupMisses() int {
	n := 0
	for _, g := range al.groups {
		n += g.a.Stats().Misses
	}
	return n
}

// saHitState returns the C state whose sa_hit_last serves alloc_graph's
// plan-cache hits without a call into Go (ggml.Allocator.HitState), for an
// allocator of one buffer type; nil otherwise.
//
//export saHitState
func saHitState(id C.int64_t) unsafe.Pointer {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() || len(al.groups) != 1 || env.testFallback != "" {
		return nil
	}
	return al.groups[0].a.HitState()
}

// saHits counts n plan-cache hits that sa_hit_last served.
//
//export saHits
func saHits(id C.int64_t, n C.int64_t) {
	mu.Lock()
	defer mu.Unlock()
	if al := get(id); al != nil {
		al.hits += int64(n)
	}
}

// saAllocCached places graph when the allocator has one group and a plan
// of it covers the graph (a plan-cache hit) and returns 1; otherwise it
// places nothing and returns 0, and alloc_graph goes the long way.
//
//export saAllocCached
func saAllocCached(id C.int64_t, graph unsafe.Pointer) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() || len(al.groups) != 1 || env.testFallback != "" {
		return 0
	}
	defer guard(al, &ret)
	g := al.groups[0]
	C.sa_buffer_reset(g.a.Buffer())
	placed, err := g.a.AllocCached(graph)
	if err != nil || !placed {
		return 0
	}
	al.hits++
	return 1
}

//export saAllocGraph
func saAllocGraph(id C.int64_t, graph unsafe.Pointer) (ret C.int) {
	mu.Lock()
	defer mu.Unlock()
	al := get(id)
	if !al.served() {
		return C.SA_FALLBACK
	}
	defer guard(al, &ret)
	if env.testFallback == "alloc_graph" {
		al.giveUp("SUBARENA_GGML_TEST_FALLBACK=alloc_graph")
		return C.SA_FALLBACK
	}
	if !al.placeable(graph) {
		return 0
	}
	if err := al.exclude(graph, al.nodeIDs, al.leafIDs); err != nil {
		al.giveUp(err.Error())
		return C.SA_FALLBACK
	}
	before := al.groupMisses()
	ahead := al.plannedAhead
	al.plannedAhead = false
	for _, g := range al.groups {
		missed := g.a.Stats().Misses
		// as gallocr does before placing a graph (a backend may keep
		// per-tensor state in a buffer; the CPU's keeps none)
		C.sa_buffer_reset(g.a.Buffer())
		if err := g.a.AllocGraph(graph); err != nil {
			al.giveUp(err.Error())
			return C.SA_FALLBACK
		}
		if env.log && g.a.Stats().Misses > missed {
			if p, err := g.a.Plan(graph); err == nil {
				al.logPlan("alloc_graph", graph, g, p)
			}
		}
	}
	al.updateSizes()
	if al.groupMisses() > before || ahead {
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
	if !al.served() || buffer < 0 || int(buffer) >= al.nBufs {
		return 0
	}
	g := al.groups[al.groupOf[buffer]]
	if g.ids[0] != int(buffer) {
		return 0 // the buffer of a buffer type used twice counts once
	}
	return C.size_t(g.a.BufferSize())
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
	out := llamacpp.Stats{Allocators: []llamacpp.AllocatorStats{}}
	for _, al := range allocs {
		if al.served() {
			al.updateSizes()
		}
		s := llamacpp.AllocatorStats{ID: al.id, BufferTypes: al.nBufs, BufferType: al.bufType, Calls: map[string]int64{},
			CPUNs: map[string]int64{}, Hits: al.hits, Misses: al.misses, MissesAfterReserve: al.missesAfterReserve,
			Fallbacks: al.fallbacks, Fallback: al.fallback, Sizes: al.sizes, GallocrSizes: al.gallocrSizes,
			GallocrReadSizes: al.gallocrReadSizes,
			PlanNs:           al.planCPU.Nanoseconds(), FirstPlanNs: al.firstPlan.Nanoseconds(),
			GallocrReserveNs: al.firstShadow.Nanoseconds()}
		for _, b := range al.bound {
			s.Bound += b
		}
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
