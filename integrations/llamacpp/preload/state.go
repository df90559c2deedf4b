//go:build subarena_extggml

package main

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/debug"
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

// group is the buffer ids of one gallocr that share a buffer type, and
// the Allocator that places their tensors in one buffer (gallocr, too,
// gives a buffer type used twice one buffer).
type group struct {
	a    *ggml.Allocator
	buft unsafe.Pointer
	ids  []int // buffer ids, ascending: the first reports the buffer's size
}

// allocator is one gallocr handle of the shim's.
//
// With one buffer type (llama.cpp on the CPU) it has one group, which
// excludes nothing. With several, each group plans its own tensors — those
// whose node or leaf buffer id is one of its ids — with the other groups'
// tensors external (ggml.Allocator.Exclude), one after the other.
type allocator struct {
	id       int64
	groups   []*group // nil when a real gallocr serves it
	groupOf  []int    // buffer id -> index in groups
	nBufs    int
	bufType  string
	fallback string // why a real gallocr serves it, "" while it does not
	reserved bool   // a reserve_n or reserve_n_size call has been served
	freed    bool
	// the buffer ids of the last reserve_n (several groups only): what
	// alloc_graph places a graph of the same node and leaf counts with
	nodeIDs, leafIDs []int32
	plannedAhead     bool // saWouldPlan planned the graph alloc_graph is about to place

	allocStats
}

// allocStats is an allocator's figures for SUBARENA_GGML_STATS: counted
// by the calls it serves, read only when they are reported.
type allocStats struct {
	calls              [C.SA_CALL_KINDS]int64
	cpuNs              [C.SA_CALL_KINDS]int64
	hits, misses       int64
	missesAfterReserve int64
	fallbacks          int64
	sizes              []int64
	gallocrSizes       []int64
	gallocrReadSizes   []int64 // gallocr's sizes with the leaves no node reads left out
	bound              []int64 // per group: the largest lower bound of its plans
	planCPU            time.Duration
	// firstPlan and firstShadow are the FirstPlan of the plan whose ratio
	// to the shadow gallocr's reserve of the same graph (shadowNs, the last
	// one timed) is the largest, and that reserve's time
	firstPlan, firstShadow time.Duration
	shadowNs               time.Duration
	dumped                 int     // plans written to SUBARENA_GGML_DUMP
	hitNs, missNs          []int64 // CPU time of each alloc_graph call that placed a planned graph, and of the others
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
	dump     string // SUBARENA_GGML_DUMP: a directory for each plan's trace
	ggmlOnly bool   // SUBARENA_GGML_INPLACE=ggml: ggml's in-place rule only
	check    bool   // SUBARENA_GGML_CHECK=1: every plan through the safety checker
	// testFallback names a kind of call (reserve_n, alloc_graph) whose
	// first occurrence the Go side gives up, as it would one it cannot
	// serve: the tests' way to reach the fallback on a supported graph.
	testFallback string
}

// defaultBudget is the search time of a reserve's plan when
// SUBARENA_GGML_BUDGET is unset: spent only when the greedy placement is
// above the planner's lower bound (the search stops at the bound), on the
// few graphs llama.cpp reserves at context creation. On the zoo it lowers
// phi3's buffer to its bound in about 15 ms (flash attention,
// n_outputs_max=1) and costs nothing where greedy is at the bound.
const defaultBudget = 100 * time.Millisecond

func readEnv() config {
	c := config{log: os.Getenv("SUBARENA_GGML_LOG") == "1", stats: os.Getenv("SUBARENA_GGML_STATS"),
		relayout: os.Getenv("SUBARENA_GGML_RELAYOUT") == "1", testFallback: os.Getenv("SUBARENA_GGML_TEST_FALLBACK"),
		dump: os.Getenv("SUBARENA_GGML_DUMP"), ggmlOnly: os.Getenv("SUBARENA_GGML_INPLACE") == "ggml",
		check: os.Getenv("SUBARENA_GGML_CHECK") == "1"}
	c.budget = defaultBudget
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

// notePlan records a new plan's first plan time beside the shadow
// gallocr's reserve of the same graph, timed just before it (when the stats
// are written, sa_shadow runs before each plan): the pair with the largest
// ratio is kept.
func (al *allocator) notePlan(first time.Duration) {
	shadow := al.shadowNs
	al.shadowNs = 0
	if shadow <= 0 {
		return
	}
	if al.firstShadow == 0 || float64(first)/float64(shadow) > float64(al.firstPlan)/float64(al.firstShadow) {
		al.firstPlan, al.firstShadow = first, shadow
	}
}
