// Package ggml makes subarena a drop-in replacement for ggml's graph
// allocator (ggml_gallocr) on the real ggml engine: the ggml of the pinned
// llama.cpp release (node-llama-cpp 3.21.1's prebuilt Linux x86-64
// libraries, ggml 0.23.0, and the matching headers), the one
// integrations/llamacpp's LD_PRELOAD library runs in. Run release.sh once
// to fetch and unpack it into .release; the package compiles against its
// headers and links its libggml-base.so (seconds: no ggml is compiled).
// The CPU backend, which the release ships as one libggml-cpu-<arch>.so per
// instruction-set level, is loaded through ggml's backend registry
// (internal/cpubackend). Graphs compute bit for bit as under ggml_gallocr,
// in a smaller buffer.
//
// # What to call instead of gallocr
//
//	ggml_gallocr_new(buft)                 ggml.New(ggml.Options{BufferType: buft})
//	ggml_gallocr_new(cpu buffer type)      ggml.New(ggml.Options{})   // C memory of its own, mmap'd
//	ggml_gallocr_reserve(galloc, graph)    a.Reserve(graph)
//	ggml_gallocr_alloc_graph(galloc, g)    a.AllocGraph(g)
//	ggml_gallocr_get_buffer_size(ga, 0)    a.BufferSize()
//	ggml_gallocr_free(galloc)              a.Free()
//
// Graphs are passed as unsafe.Pointer to a struct ggml_cgraph built in a
// no_alloc context, as they are passed to gallocr; then the caller sets the
// inputs and runs ggml_backend_graph_compute. The buffer is one
// ggml_backend_buffer_t (Buffer): never Go memory, since ggml's structs keep
// pointers into it. As with gallocr, tensors that already have data or a
// buffer (weights, the KV cache) are left where they are; graph inputs
// (ggml_set_input) hold their bytes from the start until their last reader;
// outputs (ggml_set_output) are never overwritten. AllocGraph grows the
// buffer when a graph needs more, as gallocr does with one buffer; Reserve
// sizes it for the worst graph up front.
//
// # What it does
//
// ReadGraph maps the graph to a subarena-trace/v1 trace on one engine (Engine),
// exactly as ggmltrace.Import maps ggml-alloc's JSON export of the same
// graph (the tests read ggml-tiny's graph, built here with ggml's ops, to
// the trace of testdata/ggml/ggml-tiny.json step for step): views with
// their exact offsets and byte strides (ne/nb innermost first become
// shape/strides outermost first), one op per computing node reading its
// sources and writing its tensor, each own tensor released after its last
// reader, outputs held. Which ops run in place is ggml's rule, one function
// for the importer and the reader (ggmltrace.CanInplace):
// ggml_op_can_inplace lists the op (a test checks the list against the
// linked ggml's, op by op), and an op runs out of place when an input it
// could be paired with has another type or ne (ggml-alloc's
// ggml_are_same_layout asks the same).
// Dump writes the trace, for `subarena plan`, `check` and `viz`.
//
// An Allocator on ggml's CPU buffer type runs in place, beyond ggml's list,
// the kernels of package kernels' table: (op, variant, type, layout)
// entries whose CPU kernels were read and checked to compute the same
// bytes with their output over an input as in memory of its own (GLU's
// two-source forms, SwiGLU and GeGLU among them: the FFN's gate, up and
// GLU output are live together at its peak), each backed by
// integrations/llamacpp's kernel-check. The table applies only with the
// ggml version it names; ReadGraph, and an Allocator on any other buffer
// type, keep ggml's rule (inplace.go).
//
// The planner (trace/plan) then gives every own tensor an offset knowing
// every future use: each byte lives only until the last op that reads it
// through any view (the K and V thirds of a fused QKV product die when the
// cache copies have read them, long before Q), and an elementwise op's
// output may take the bytes of an input that dies at that op, through a
// view too. When that input is strided — the gate half of a fused gate/up
// product, the Q and K heads of QKV — the output is laid over its exact
// footprint: its nb become the footprint's strides and its views are
// re-expressed over it (see relayout.go). ggml's kernels do not all accept
// such layouts, so a relaid tensor is kept only when its writer and every
// reader are kernels verified by a bit-exact test on those layouts (SiLU,
// GELU, mul, add, rms_norm and rope writing; mul_mat, cpy, cont, SiLU,
// GELU, mul, add, rope, the norms and flash attention reading); otherwise
// its op runs out of place and the graph is planned again. Options.
// NoRelayout keeps every tensor at an offset.
//
// Plans are cached by the graph's topology: every node's op (and unary
// kind), every own tensor's type and flags, which tensors are own and
// which external, and every link between tensors (sources and view_src),
// compared whole (no hash is trusted). Sizes are not part of it: a graph of
// a planned topology whose own tensors fit the plan is placed with that
// plan (see Dominated graphs). Views of external tensors are not part of
// it either, so a decode loop whose KV-cache views move each step keeps
// its plan. A graph rebuilt in the same context memory (llama.cpp reuses
// one buffer for every graph's metadata) is matched link by link against
// the last one placed, with no lookup table at all, in the same pass that
// checks that it fits.
//
// # Dominated graphs
//
// ggml_gallocr places every graph of the reserved graph's node count whose
// tensors fit their reserved slots at the reserved offsets: llama.cpp
// reserves its worst case (n_ubatch tokens, the whole context) once and
// places each smaller prompt chunk and each decode step there. AllocGraph
// does the same, planning nothing, when a cached plan covers the graph
// (Covers): the graph has the plan's topology and, in one pass over its
// records (sa_fit in sa_ggml.c),
//
//  1. every own tensor's allocation size is at most its slot's (the
//     planned tensor's), so it lies inside its slot at the planned offset;
//  2. a view of an own tensor whose slot the plan shares with no tensor
//     live at the same time (the tensor dies whole) lies inside the slot;
//  3. a view of a partial tensor — one whose slot the plan shares with a
//     tensor live while it is, using bytes of it that die early (the K and
//     V thirds of a fused QKV product) — has the planned view offset, no
//     more elements along any dimension, and the planned stride along
//     every dimension of more than one element: each of its elements is
//     one of the planned view's, at the same byte;
//  4. relaid tensors and their views have exactly their planned ne, nb and
//     view offsets;
//  5. for every node writing an own tensor U and every source S of it whose
//     base's slot meets U's (listed when planning, sa_pairs): if S's bytes
//     still meet U's, S lies element for element under U (same offset, type,
//     ne, and strides along dimensions of more than one element) when it
//     did in the plan, and otherwise both keep their planned dims.
//
// Why this keeps the plan safe. The graph has the plan's nodes in the
// plan's order, so every tensor is written by the same op and read by the
// same ops. A byte of an own tensor lives from the op that writes it (the
// graph's start for inputs and leaves) to the last op that reads it
// through any view (the end for outputs); the plan is safe when tensors
// whose bytes overlap are never live at the same byte at once, but at an
// op that reads one in place while writing the other. Take two own tensors
// A and B whose slots overlap, and a byte b in both (rules 1 and 4 keep
// every byte in its slot). If the plan gave A and B whole lifetimes that do
// not meet, b's lifetime under each, being inside its tensor's whole
// lifetime, cannot meet either. If their whole lifetimes meet in more than
// one op, the plan used bytes that die early: both are partial, and by
// rules 3 and 4 every view of either covers in the small graph only bytes
// it covered in the planned graph, read by the same ops, so b lives no
// longer in either tensor than it did in the plan, which kept them apart.
// If they meet at one op only, the op that reads A last and writes B,
// rule 5 leaves that op either reading none of B's bytes through A or
// reading them element for element where it writes them, as ggml's
// in-place kernels do (ggml_op_can_inplace, or the verified table of
// package kernels; the plan paired them so).
// Rule 2 needs nothing more: a tensor that dies whole shares its slot only
// with tensors whose lifetimes do not meet its own but at such an op.
//
// Rule 4 is strict: a plan that relays tensors (the default here, not in
// the llama.cpp drop-in) covers only graphs whose relaid tensors keep their
// sizes, so with relayout most smaller graphs are planned anew; with
// Options.NoRelayout a reserved worst case covers them.
//
// TestDominatedGraphs places random smaller steps of random models (both
// architectures, every attention variant, batches, padded caches) with the
// plan of a reserved larger one and runs the safety checker (trace/check)
// on each small graph's own trace with the offsets it got: every one passes.
// Under llama.cpp (integrations/llamacpp), no graph is planned after the
// reserve at context creation, whatever the prompt's length and chunking.
//
// # The first plan
//
// Before the planner, every graph gets a first plan: one greedy pass over
// the scanned records, in C, with no trace, names or planner (sa_first_plan
// in sa_first.c), doing what ggml_gallocr_reserve does on the liveness of
// the planner's trace of the same graph. Every own tensor keeps whole
// bytes from the op that writes it (the graph's start for leaves and
// inputs) to the last op that reads it or a view of it (the end for
// outputs and what an output views), and takes the smallest free block it
// fits, or the top; an op on ggml's in-place list (ggml_op_can_inplace,
// with the same-layout test the trace marks in-place ops with) writes its
// output over a source that dies at it, when the source is an own tensor,
// not a view, read once by the op, with the output's type, ne and strides:
// element for element. It costs about one ggml_gallocr_reserve (see What
// it costs), and it is
//
//   - the plan of a graph AllocGraph meets once the buffer exists, when it
//     fits the buffer (Stats.FirstPlans): such a graph only has to fit,
//     and the planner runs only when the first plan does not;
//   - the plan the planner's is compared with wherever the planner runs
//     (Plan, Reserve, a graph that sizes the buffer): the lower is kept,
//     so no plan is above the one-pass greedy's. The planner's bound holds
//     under its own in-place choices, and on a few small graphs its
//     strided in-place placements (relaid tensors) leave holes that pin
//     more than ggml's rule applied greedily needs
//     (TestPlanKeepsLowerFirstPlan: 71,308 bytes relaid, 57,228 without
//     relayout, 66,976 for the first plan); Plan.OnePass says when the
//     first plan is kept, with the planner's answer beside it in
//     Plan.Result.
//
// FirstPlan returns it alone. Its plans are checked like the planner's:
// with Options.Check (and under the invariants build tag) each is run
// through check.Plan on the graph's trace before it is used
// (TestFirstPlanChecked plans every ggmlbench graph so, and
// TestFirstPlanCheckBites shows the check rejecting a broken one). The
// first plan shares slots only between tensors whose whole lifetimes do
// not meet, or meet at the one op that writes one in place over the
// other, so no tensor of it is partial and the argument of Dominated
// graphs holds for the graphs a first plan covers.
//
// # What it saves
//
// Measured with `go run ./cmd/ggmlbench -big -sizes` (README's table, which
// the command's test compares): on LLaMA-style graphs with fused QKV and
// gate/up matmuls split by views, subarena's buffer is 0.738 of gallocr's
// (geomean of 13 prefill graphs, widths 256 to 4096, batch 1 and 8, softmax
// or flash attention; 0.735 on a LLaMA-7B 512-token flash prefill), the
// strided placements taking it from the 0.90 offsets reach. On LLaMA graphs
// in llama.cpp's form (separate Q, K and V matmuls, gate and up joined by
// ggml_swiglu_split) nothing is strided, and subrange lifetimes with GLU in
// place over its dying gate (package kernels) give 0.734 on prefill graphs.
// GPT-2-style prefill graphs reach 0.872. Decode graphs are dominated by the
// logits, an output held to the end: 0.97-0.98. It is never larger than
// gallocr's on any graph tested, and all 52 graphs are at the planner's
// proven lower bound with the greedy start alone.
//
// # What it costs
//
// A plan-cache hit costs one pass over the graph's tensors comparing them
// with the cached topology (the scanned tensors' links by pointer) and
// checking that they fit (at once when every tensor has the planned dims),
// and one placing them, with no Go allocation: less than
// ggml_gallocr_alloc_graph costs on a graph gallocr has reserved (0.29-0.71
// times it in CPU time, median 0.46, over the 52 graphs of one run of
// `go run ./cmd/ggmlbench -big` on a shared 2-core machine; 2.0-5.4 us
// against 4.7-9.6 us in BenchmarkSubarenaHit against
// BenchmarkGallocrAllocGraph). A C host can take the whole hit in C
// (HitState and sa_hit_last), as the llama.cpp drop-in does. A miss first
// reads the graph and makes its first plan (see The first plan): 0.91-2.13
// times ggml_gallocr_reserve in the same run (median 1.48; 15-46 us up to
// width 2048, 150-240 us at LLaMA-7B width, the cache entry included).
// Once the buffer exists that is all a graph that fits it costs. Where the planner runs (Plan,
// Reserve, a graph that sizes the buffer) it builds and resolves a trace
// and plans it: 17-299 times a reserve (median 26), 0.23-2.7 ms up to width
// 2048, 14 ms for the GPT-2 small 1024-token prefill and 26 ms for the
// LLaMA-7B softmax prefill, whose greedy start misses the bound so that the
// planner derives the finer problem. Options.Budget is for those graphs,
// the ones that size the buffer. The cache holds Options.CacheSize plans
// (DefaultCacheSize by default). BenchmarkGallocr* and BenchmarkSubarena*
// measure both on the same graphs in one process, ggmlbench on more.
//
// # Differences from gallocr
//
// Every graph leaf gets memory, read by a node or not, as under gallocr
// (the reader takes the leaf list from struct ggml_cgraph, in the release's
// private ggml-impl.h): the host may write any leaf before the graph runs.
// A leaf no node reads is, like any input after its last reader, dead once
// the graph starts. A relaid tensor's nb are changed in the graph, as
// gallocr changes data and buffer; inputs, outputs and their views are
// never relaid, so ggml_backend_tensor_set and _get on them see the layouts
// the graph was built with. Allocating the same graph again places its tensors afresh at
// the same offsets (gallocr leaves tensors that have data alone). An
// Allocator is safe for concurrent use; the graphs it places are not.
//
// # Reordering
//
// ggml computes the nodes in graph order, but any order that keeps each
// node after the nodes it reads (and each write to the KV cache after the
// reads and writes of those bytes before it) computes the same bytes.
// ReorderGraph lists the orders plan.Reorder's memory-aware list
// scheduling gives the graph's trace, plans the graph in each as
// AllocGraph would, and permutes the graph's nodes (PermuteNodes, on the
// cgraph's node array) to the best only if neither its bound nor its plan
// is above the graph's own order's; AllocGraph then plans the reordered
// graph. With Options.Reorder, AllocGraph does this itself, deciding the
// order once per graph structure. The tests compute LLaMA- and GPT-2-style
// graphs in every order it tries, bit for bit as in their own order, and a
// graph of independent branches built with every branch's wide temporary
// live at once, which reordering shrinks 1.7 to 3.7 times.
//
// On every graph ggmlbench builds it finds nothing lower, and
// plan.OrderBound (GraphOrder.OrderBound) shows why: the live bytes peak
// inside one chain (the gate/up product and its activation beside the
// residual in LLaMA, the attention scores in GPT-2), the same in every
// order, and the fixed order's plan is within a granule of that bound on
// all graphs but the LLaMA-7B softmax prefill, whose planner bound is set
// by the Q rope laid over the Q rows of the fused QKV product (a strided
// in-place placement: its holes are the placement's, not the order's).
//
// # Online mode
//
// Online drives a graph op by op with a subarena.Allocator instead of
// planning it, the way a host program drives an asynchronous device: memory
// is handed out and taken back while the work runs, on three engines of its
// Timeline: OnlineCompute, OnlineCopy and OnlineConsumer.
//
// An Online owns one arena of C memory (mmap, never the Go heap: ggml keeps
// pointers into it), wrapped twice: as a ggml CPU buffer
// (ggml_backend_cpu_buffer_from_ptr), which tensors are placed in with
// ggml_backend_tensor_alloc and ggml_backend_view_init, and as the Backing
// of a subarena.Allocator, whose buffers are offsets into it. A
// sync.Timeline holds three engines, each a goroutine of a sync.Executor:
//
//   - compute runs ggml's CPU backend one node at a time (a one-node graph
//     through ggml_backend_graph_compute, with OnlineOptions.Threads
//     threads of a persistent ggml threadpool);
//   - copy offloads every write into a resident tensor (the new K/V rows a
//     ggml_cpy stores into a view of the KV cache) to host memory;
//   - consumer reads each step's output rows (the logits row of the last
//     new token of each sequence) into Go memory.
//
// Step is the host. It walks the graph's nodes in execution order and, for
// each node that computes, does what an engine's host code does:
//
//   - Alloc the node's output at the compute engine's point (a view takes
//     no buffer: its data is its base's plus view_offs), and point the
//     tensor at it; when nothing fits, wait for the event the NoSpaceError
//     names and retry. An op ggml can run in place computes instead into a
//     source of its layout that no later node touches, as ggml-alloc lays
//     it out, and the source's bytes become the output's with Donate once
//     the node is submitted;
//   - submit the node to the compute engine, then Use every arena view the
//     node reads (its sources, with their exact ggml layouts: view_offs,
//     and ne/nb turned into shape/strides outermost first) and the view it
//     writes;
//   - after a write into a resident tensor, submit a copy op that waits
//     for the node and reads exactly the bytes the node wrote; after an
//     output node (GGML_TENSOR_FLAG_OUTPUT), a consumer op that waits for
//     it and reads the output rows;
//   - once the last op that reads a view has been submitted, Discard the
//     view if no later op reads any of its bytes (the Q, K and V thirds of
//     a fused projection, the gate half of gate/up), and Release a buffer
//     once its last reader — the consumer, for an output — has been
//     submitted.
//
// Inputs (leaves without data) are allocated when the step starts and
// written by the step's first compute op, which calls OnlineInput.SetInputs
// on the compute engine: the host never writes arena bytes itself, since a
// buffer taken fenced may still be read by compute ops queued before it.
// Completions flow back from the engine goroutines through the Timeline;
// the host never waits for one unless an allocation does not fit or it is
// asked to (OnlineStep.Wait, Flush).
//
// Tensors that outlive a step — the KV cache — become resident with Adopt:
// they move into the arena as long-lived buffers, and graphs built
// afterwards view them there, so that the copy engine reads the new cache
// rows through a subarena view of exactly those bytes. Weights and other
// tensors with data of their own stay where they are; the Allocator never
// sees them.
//
// Under every safe policy a run's outputs and offloads are the bytes ggml
// computes for the same graph with every tensor in its own memory. On the
// test decoders subrange-fenced needs an arena within 2% of ggml_gallocr's
// buffer beyond the KV cache (gallocr's exactly with a 32-byte granule),
// although it places each node as it comes instead of planning the graph's
// offsets. Under
// subarena.IROrder a buffer's bytes return at Release while the consumer
// has yet to read them; with the consumer held back
// (OnlineOptions.HoldConsumer) the next step's nodes overwrite the rows
// first, and the consumer reads wrong bytes.
package ggml
