package llamacpp

// Stats is the JSON object libsubarena-ggml.so writes to the file
// SUBARENA_GGML_STATS names, at exit: one entry per gallocr the host made.
// The library writes it and the rig reads it with this one definition.
type Stats struct {
	Allocators []AllocatorStats `json:"allocators"`
}

// AllocatorStats is one allocator (one ggml_gallocr_new_n) in Stats.
type AllocatorStats struct {
	ID          int64  `json:"id"`
	BufferTypes int    `json:"buffer_types"`
	BufferType  string `json:"buffer_type"`
	// Calls and CPUNs count the calls of each gallocr function and the
	// thread CPU time spent in them, by function name (reserve_n,
	// alloc_graph, ...).
	Calls map[string]int64 `json:"calls"`
	CPUNs map[string]int64 `json:"cpu_ns"`
	// Hits and Misses count alloc_graph calls placed from a plan and
	// planned; MissesAfterReserve the misses once a reserve has sized the
	// buffers.
	Hits               int64 `json:"hits"`
	Misses             int64 `json:"misses"`
	MissesAfterReserve int64 `json:"misses_after_reserve"`
	// Fallbacks counts calls served by ggml's gallocr; Fallback says why,
	// once the allocator gave up.
	Fallbacks int64  `json:"fallbacks"`
	Fallback  string `json:"fallback,omitempty"`
	// Sizes are the buffer sizes per buffer id; GallocrSizes what ggml's
	// reserve_n_size gives for the same graphs; Bound the sum of each
	// buffer's largest lower bound.
	Sizes        []int64 `json:"sizes"`
	GallocrSizes []int64 `json:"gallocr_sizes"`
	// GallocrReadSizes is GallocrSizes with the leaves no node reads
	// (llama.cpp's inp_embd on token input) left out, which gallocr gives
	// memory and the library gives memory dead from the graph's start.
	GallocrReadSizes []int64 `json:"gallocr_read_sizes"`
	Bound            int64   `json:"bound"`
	PlanNs           int64   `json:"plan_ns"`
	// FirstPlanNs is a first plan (ggml.Plan.FirstPlan: reading the graph
	// and the one greedy pass every plan starts from) and GallocrReserveNs
	// ggml's reserve of the same graph in the same call (a shadow gallocr's
	// ggml_gallocr_reserve_n_size, run just before), both wall time of the
	// calling thread: of the allocator's plans, the one whose ratio of the
	// two is the largest.
	FirstPlanNs      int64 `json:"first_plan_ns"`
	GallocrReserveNs int64 `json:"gallocr_reserve_ns"`
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
