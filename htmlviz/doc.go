// Package htmlviz renders a memory timeline as one self-contained, interactive HTML
// page: subarena's answer to PyTorch's memory viewer. It is the renderer only: it reads
// no trace, and of the rest of subarena uses only the checker's Party, the side of a
// violation it shows as the checker reports it. bench.ViewerPage builds a Page from a
// trace and its replays or plans; `subarena viz FILE --html` writes one.
//
// # What the page shows
//
// One panel per run (two when comparing, on one time axis): the host step across, the
// arena offset up, one rectangle per piece of a buffer while the program holds it, and
// hatched while the bytes it has let go still wait for pending users; the running
// high-water mark, the final HWM and LiveLB as lines; the checker's violations as red
// boxes over the bytes both buffers reach, from the reader's step to the writer's,
// labelled with the missing happens-before edge. Hovering a piece tells its buffer and
// bytes, what lets it go (the release, or the discarded view and its chain), its users
// or, when pending, the uses that pin it (op, event, access, the view chain to the
// buffer), the fence the next owner must be ordered after, and when it becomes clean.
// Clicking a piece, or searching a name, selects a buffer: its pieces are outlined in
// every panel and its views and pieces listed. The wheel zooms the steps (shift: the
// offsets), dragging pans, a double-click resets.
//
// The page draws on a <canvas>, culling what is outside the window, so traces of tens
// of thousands of pieces stay responsive. Everything it needs is in the file: the
// script and style sheet (assets/*.js, assets/viewer.css in this package, embedded)
// and the data; it loads nothing from the network.
//
// # Script API
//
// window.subarenaViewer offers pieceCount(run), drawnCount(run), violationCount(run),
// runs(), timings() (JSON parse, first layout and draw, and the time since navigation at
// which the first frame was drawn, in ms), locate(buffer, run, pending), locatePiece(run,
// i) and locateViolation(run, i) (page coordinates of a whole pixel where that piece or
// violation is the one under the pointer), tooltipText(), select(buffer), selected(),
// search(query), view(), setView(x0, x1, y0, y1) and zoomTo(buffer); each canvas carries
// data-run, data-pieces and data-violations, and the body data-pieces (all runs),
// data-selected and data-ready="true" once the first frame is drawn. The tests in
// integrations/browser drive the page through it and through real pointer and key
// events.
//
// # The data: subarena-viewer/v1
//
// The page embeds its data (Page.Schema is Schema) as the JSON encoding of Page in
// <script type="application/json" id="subarena-data">. Indices are positions in the
// arrays named; steps index the trace's steps, and a step equal to "steps" is the end
// of the trace.
//
//	{"schema": "subarena-viewer/v1", "title": "...", "trace": "split-qkv", "granule": 256,
//	 "steps": 12, "engines": ["compute", "copy"],
//	 "buffers": [{"name": "qkv", "size": 24576, "step": 0, "release": 8}],
//	 "views":   [{"name": "v", "buffer": 0, "parent": -1, "step": 4, "discard": -1}],
//	 "ops":     [{"name": "offload_v", "engine": 1, "seq": 1, "step": 7, "done": 12,
//	              "start": 4, "end": 24}],
//	 "runs": [{"label": "subrange-fenced", "kind": "replay", "hwm": 32768, "livelb": 32768,
//	           "highWater": [24576, ...],
//	           "pieces": [[0, 1024, 1536, 8, 12, 1, -1, -1, [2, 2, 1]], ...],
//	           "checked": true, "violations": []}]}
//
// The keys:
//
//   - buffers: every buffer: name, size in bytes, "external": true for one outside the
//     arena (never placed, so without pieces), the alloc step and the releasing step
//     (-1: held to the end).
//   - views: name, the buffer it reaches, the view it was taken of (-1: the buffer),
//     its step and the step discarding it (-1: none). A view chain is a view, its
//     parents, then the buffer.
//   - ops: name, engine index, seq (its place on the engine from 1, so its event is
//     engine#seq), its step, done (the step after which the host has seen it complete:
//     a sync on it or on an op it happens-before, or "steps" for the end of the trace),
//     and the simulated [start, end) it ran over (-1 when unknown).
//   - runs: label, kind ("replay" or "plan"), hwm and livelb in bytes (livelb 0:
//     unknown), relaid (the plan's buffers laid over strided footprints of others, which
//     LiveLB does not bound: a panel below LiveLB says so), highWater (one entry per step: the high-water mark after it), pieces,
//     checked (whether the checker ran) and violations.
//   - a piece is the array [buffer, lo, hi, from, to, flags, holder, host, users]:
//     arena bytes [lo, hi) of buffer over steps [from, to); flags bit 0 set when the
//     bytes are let go and pending; holder, the view whose discard lets them go (-1:
//     the buffer's release); host, the buffer a plan lays this one over (-1: none);
//     users, flat triples op, view (-1: the buffer), access (1 read, 2 write, 3
//     read-write): every op using the bytes for a live piece, the pending ones for a
//     pending piece. The fence of a pending piece is, per engine, the latest event
//     among its users.
//   - a violation is what `subarena check --json` prints (rule, ranges as [lo, hi)
//     pairs, bytes, earlier and later parties with buffer, op, engine, access and view
//     chain, missing_edge) plus from and to, the steps of the earlier and the later op.
package htmlviz
