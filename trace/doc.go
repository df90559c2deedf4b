// Package trace is subarena's one interchange format: the subarena-trace/v1 model, its
// parser and writer, the resolved Program that every tool works on, and the
// subarena-plan/v1 plan format. The packages built on it: package trace/tracefile reads a
// trace or plan of any format, telling it by content; packages trace/ggmltrace and
// trace/minimalloc import ggml graph-allocator traces and MiniMalloc CSVs (and export
// the latter); package trace/check decides whether a plan is safe and computes LiveLB;
// package trace/replay runs a trace against the real Allocator (and exports Chrome trace
// / Perfetto JSON); package trace/plan is the planner. This package imports none of them.
//
// # What a trace is
//
// A trace is what a host program issues, in order: buffers come into being (alloc,
// external), views are taken of them (view), ops are submitted to engines reading and
// writing buffers or views (op), the host drops buffers or the bytes of one view (release)
// and blocks on an op (sync). docs/TRACE.md in the repository is the normative
// description of the formats and rules; this package implements it exactly and says here
// only what that document leaves open.
//
// Every byte range in this package is half-open, [lo, hi): lo is the first byte, hi one
// past the last. A view's layout (strided.Layout) is kept relative to its buffer's first
// byte; a plan's offsets are arena bytes.
//
// # Model, normalization and round trips
//
// Trace and Step are plain data mirroring the JSON one to one. Parse normalizes what the
// format lets a document leave out (granule 256, an alloc's or op's engine = the first
// engine, cost 1) and Write spells every default out, so parse → write → parse gives an
// identical Trace and a second write identical bytes. Buffers and views share one namespace
// of data names; ops have their own, so an op may bear the name of the tensor it writes
// (the ggml importer relies on this). An op's engine may be left out, like an alloc's.
//
// # Validation
//
// Parse rejects a document that breaks any rule with a *StepError carrying the step index
// (-1 for the top level), the rule (one of the Rule* constants) and an error matching one
// exported sentinel through errors.Is (ErrUnknownName, ErrUseAfterRelease, ErrOverflow,
// ...). Keys are compared exactly (encoding/json alone would fold case), duplicate keys and
// unknown keys are errors, integers must be JSON integers that fit int64, and no input
// panics. Use after release covers a released buffer, a discarded view, any view of
// either, and an op whose view touches bytes discarded earlier (checked exactly when both
// footprints are exact). StepError.Line and Column place the error in the document; an
// error in the document's text (malformed JSON, a key, a value's type) says its line and
// column in its message too. Parse also rejects a trace whose replay schedule would end
// an op beyond int64 time, so that every tool reading a trace accepts the same ones.
//
// Resolve turns a valid Trace into a Program: names bound to indices, each view's layout
// composed relative to its buffer (a child's offset is relative to its parent's first
// byte, the parent's layout Offset), each op's reads and writes merged per name, releases
// and discards recorded on their buffers. Footprints (exact covered bytes) come from
// strided.Layout.Cover with CoverBudget runs; a view needing more is represented by a
// superset, which keeps the checker and the lower bound (package trace/check)
// conservative.
//
// # Limits
//
// Every reader applies the same documented limits (docs/TRACE.md, "Limits"), refusing
// what passes one with an error matching ErrLimit that names the limit: a document of
// more than MaxDocumentSize bytes (ReadDocumentAfter stops reading one byte past it),
// more than MaxEngines engines, a granule above MaxGranule, an alloc larger than ArenaLimit(granule) (the lesser of
// MaxArena and MaxGranules granules: 1 TiB at the default granule, 4 GiB at granule 1),
// allocs not yet released needing more than that together, and a plan larger than it
// (CheckPlan). Resolve applies them, so every importer's trace gets them too, and the
// MiniMalloc reader applies them to a CSV itself; replay, check and plan therefore refuse
// the same inputs.
//
// # Plans
//
// A Plan gives every alloc buffer one offset, or a placement: the optional key
//
//	"placements": {"gate_silu": {"of": "gate_up", "offset": 0, "shape": [32, 688],
//	                             "strides": [5504, 4], "elem": 4}}
//
// lays a buffer over a strided footprint of another buffer, its host (which has an offset):
// element i of the buffer's natural dense layout, in row-major order, occupies element i
// of the footprint, a layout relative to the host's first byte as a view's is. This is how
// an in-place output takes the bytes of a strided input (the gate half of a fused gate/up
// product), which no single offset can express. ParsePlan ignores keys it does not know
// but reads "placements" strictly (exactly the keys of, offset, shape, strides, elem);
// WritePlan writes it only when there are placements. CheckPlan rejects a plan that misses
// a buffer, names one the trace lacks (or a view or an external), places a buffer at a
// negative offset or beyond the plan's size, or has a bad placement: an unknown or
// external buffer, one with an offset too, a host without an offset or allocated after the
// buffer, a footprint outside the host, of another element count or element size, or
// not one-to-one, or a view of the buffer that cannot be expressed over the footprint
// (Relayout). Each error matches ErrPlan, ErrPlacement and a sentinel naming the case.
// ViewPlacements rewrites a trace so that its plan needs no placements: each placed
// buffer becomes a view of its host. NewFrame resolves a plan for code that draws or
// accounts for arena bytes: each buffer's bytes (and each view's) relative to the offset
// of the buffer anchoring it, its own or its host's, so a placed buffer is its footprint.
//
// # Other formats
//
// Parse reads subarena-trace/v1 only. Package trace/tracefile's Read and Load take any
// format by content (a JSON object by its "format" key, FormatKey; a MiniMalloc CSV by
// its header row) and hand ggml traces to package trace/ggmltrace and MiniMalloc CSVs to
// package trace/minimalloc; an importer builds a Trace and validates it as Parse does, so
// every reader accepts the same traces and rejects the rest with this package's
// sentinels (ErrUnknownFormat for input of no known format).
//
// # Checking a plan
//
// Whether a plan is safe is decided by package trace/check (check.Plan), which also
// computes LiveLB, the lower bound on any safe arena that places buffers at offsets, for
// a schedule; see its package doc for both definitions. This package gives them what they share with the replay and the
// planner: the happens-before relation of a Program's ops (Order, NewOrder), the rule by
// which a buffer lets its bytes go (LetGo, LetGoGroup) and a plan resolved against its
// program (NewFrame), placed buffers laid over their footprints.
//
// # Replay
//
// The replay, which runs a trace's host program against the real Allocator on simulated
// engines, is package trace/replay: this package, the checker and the planner do not link
// the Allocator.
//
// # Costs
//
// Let N be the steps, U the uses and R the byte runs of the uses' footprints and of the
// buffers' death pieces (one per dense use; a strided view has up to CoverBudget). The
// package's own costs are near-linear in them; scale_bench_test.go measures them on
// generated traces at three sizes. Parse reads a document as tools write it (no escapes in strings, integers, no
// null, "engines" before "steps") in one pass, and anything else with encoding/json, in a
// few passes; both then Resolve, which is O(N + U) plus one Cover per view (cached); an
// op naming one buffer twice is found through an index, and a use of a buffer with
// discarded views is tested against the discarded bytes in O(r log D) for its r runs and
// D discarded runs. ParseProgram returns the Program that validation built.
// NewOrder costs O(ops × engines). LetGo costs O(R log R) for a buffer's R discarded
// runs (the checker's costs are in package trace/check's doc). None of this
// is a hot path: the allocation fast path lives in the root package; these are planning
// and reporting tools.
package trace
