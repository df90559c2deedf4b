package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unsafe"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/ggmltrace"
)

// Engine is the one engine of a trace read from a ggml graph: ggml computes a
// graph's nodes in order on one backend.
const Engine = ggmltrace.Engine

// ErrGraph reports a graph the reader cannot map: a nil graph, a tensor
// whose layout the trace model cannot hold, or no memory for the scan.
var ErrGraph = errors.New("ggml: bad graph")

// Tensor kinds, as sa_ggml.h numbers them.
const (
	kindOwn     = C.SA_OWN
	kindExt     = C.SA_EXT
	kindViewOwn = C.SA_VIEW_OWN
	kindViewExt = C.SA_VIEW_EXT
)

// tensor is one tensor of a graph as the reader sees it: the fields of a
// ggml-alloc-trace/1 tensor, with links as positions in the walk order.
type tensor struct {
	rec       int32 // record index in the scan
	name      string
	op        int32
	typ       int32
	ne, nb    [4]int64
	nbytes    int64
	allocSize int64 // own tensors: ggml_backend_buft_get_alloc_size; else nbytes
	src       []int32
	viewSrc   int32
	viewOffs  int64
	input     bool
	output    bool
	kind      int32
	exec      int32 // node index, -1 for a leaf
	sub       int32 // UNARY and GLU: the op's kind (op_params[0])
	extra     bool  // the backend keeps extra data for the tensor (repacked weights)
}

func (x *tensor) isView() bool  { return x.viewSrc >= 0 || isViewOp(x.op) }
func (x *tensor) isOp() bool    { return x.exec >= 0 && !isViewOp(x.op) }
func (x *tensor) isAlloc() bool { return x.kind == kindOwn }

// scanner wraps the C scan state.
type scanner struct {
	s *C.sa_state
	// The memory tensors reuses from call to call.
	ts                []tensor
	pos, order, srcs  []int32
	consumed, visited []bool
	seen              map[string]int
	// names holds the tensor names read so far, each once: a graph read
	// again (a miss of the same model) makes no new strings for them.
	names map[string]string
}

// maxNames bounds scanner.names; past it the map starts afresh.
const maxNames = 1 << 14

// name returns the NUL-terminated tensor name in n as a string, the one
// read before when there is one.
func (sc *scanner) name(n *[C.GGML_MAX_NAME]C.char) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&n[0])), len(n))
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	if s, ok := sc.names[string(b)]; ok { // the lookup makes no string
		return s
	}
	if sc.names == nil || len(sc.names) >= maxNames {
		sc.names = make(map[string]string)
	}
	s := string(b)
	sc.names[s] = s
	return s
}

func newScanner(buft unsafe.Pointer) (*scanner, error) {
	loadTables()
	s := C.sa_state_new(C.ggml_backend_buffer_type_t(buft))
	if s == nil {
		return nil, fmt.Errorf("%w: out of memory", ErrGraph)
	}
	return &scanner{s: s}, nil
}

func (sc *scanner) free() {
	if sc.s != nil {
		C.sa_state_free(sc.s)
		sc.s = nil
	}
}

func (sc *scanner) scan(graph unsafe.Pointer) error {
	if graph == nil {
		return fmt.Errorf("%w: nil graph", ErrGraph)
	}
	if C.sa_scan(sc.s, (*C.struct_ggml_cgraph)(graph)) < 0 {
		return fmt.Errorf("%w: out of memory", ErrGraph)
	}
	return nil
}

// structure identifies a graph's structure as sa_scan keys it: the key, its
// hash and the number of scan records.
type structure struct {
	hash uint64
	key  []uint64
	n    int32
}

// key returns the scanned graph's key (C memory, valid until the next scan).
func (sc *scanner) key() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(sc.s.key)), int(sc.s.n_key))
}

// keyHash returns the hash of the scanned graph's key.
func (sc *scanner) keyHash() uint64 { return uint64(C.sa_key_hash(sc.s.key, sc.s.n_key)) }

// structure returns the scanned graph's structure, its key copied.
func (sc *scanner) structure() structure {
	return structure{hash: sc.keyHash(), key: slices.Clone(sc.key()), n: int32(sc.s.n_recs)}
}

// has reports whether the scanned graph has the topology st.
func (sc *scanner) has(st *structure) bool {
	return st.n == int32(sc.s.n_recs) && slices.Equal(st.key, sc.key())
}

// dims returns the scanned graph's dims (sa_dims), alloc sizes included.
func (sc *scanner) dims() []int64 {
	d := make([]int64, int(C.SA_DIMS)*int(sc.s.n_recs))
	if len(d) > 0 {
		C.sa_dims(sc.s, (*C.int64_t)(unsafe.Pointer(&d[0])))
	}
	return d
}

func (sc *scanner) recs() []C.sa_rec {
	if sc.s.n_recs == 0 {
		return nil
	}
	return unsafe.Slice(sc.s.recs, int(sc.s.n_recs))
}

// tensors reads the scanned graph in ggml-alloc's walk order: the leaves in
// the order ggml's graph builder reached them (a depth-first walk from each
// node no later node reads, sources left to right), then the nodes in
// execution order. It returns the tensors and, per record, its position:
// slices of the scanner's, valid until its next tensors call.
func (sc *scanner) tensors() ([]tensor, []int32) {
	C.sa_sizes(sc.s)
	recs := sc.recs()
	nNodes := int(sc.s.n_nodes)
	nRec := len(recs)
	// Nodes are the first records, possibly fewer than nNodes when the
	// graph lists a tensor twice.
	nodeRecs := 0
	for nodeRecs < nRec && recs[nodeRecs].node >= 0 {
		nodeRecs++
	}
	_ = nNodes
	// Leaf order: depth-first from every root.
	consumed := zeroed(&sc.consumed, nRec)
	for r := 0; r < nodeRecs; r++ {
		for _, x := range recs[r].src {
			if x >= 0 {
				consumed[x] = true
			}
		}
	}
	pos := zeroed(&sc.pos, nRec)
	for i := range pos {
		pos[i] = -1
	}
	order := zeroed(&sc.order, nRec)[:0]
	visited := zeroed(&sc.visited, nRec)
	var visit func(r int32)
	visit = func(r int32) {
		if visited[r] {
			return
		}
		visited[r] = true
		if recs[r].node >= 0 {
			for _, x := range recs[r].src {
				if x >= 0 {
					visit(int32(x))
				}
			}
			return
		}
		pos[r] = int32(len(order))
		order = append(order, r)
	}
	for r := 0; r < nodeRecs; r++ {
		if !consumed[r] {
			visit(int32(r))
		}
	}
	for r := nodeRecs; r < nRec; r++ { // reached only through view_src
		if !visited[r] {
			visited[r] = true
			pos[r] = int32(len(order))
			order = append(order, int32(r))
		}
	}
	for r := 0; r < nodeRecs; r++ {
		pos[r] = int32(len(order))
		order = append(order, int32(r))
	}
	sc.order = order
	ts := zeroed(&sc.ts, len(order))
	if sc.seen == nil {
		sc.seen = make(map[string]int, len(order))
	}
	seen := sc.seen
	clear(seen)
	srcs := zeroed(&sc.srcs, 2*len(order))[:0]
	for p, r := range order {
		rec := &recs[r]
		t := rec.t
		x := &ts[p]
		x.rec = r
		x.op = int32(t.op)
		x.typ = int32(t._type)
		for k := range 4 {
			x.ne[k] = int64(t.ne[k])
			x.nb[k] = int64(rec.nb[k])
		}
		x.nbytes = nbytes(x.typ, &x.ne, &x.nb)
		x.kind = int32(rec.kind)
		x.allocSize = x.nbytes
		if x.kind == kindOwn {
			x.allocSize = int64(rec.alloc_size)
		}
		x.exec = int32(rec.node)
		if x.op == int32(C.GGML_OP_UNARY) || x.op == int32(C.GGML_OP_GLU) {
			x.sub = int32(t.op_params[0])
		}
		x.extra = t.extra != nil
		x.input = t.flags&C.GGML_TENSOR_FLAG_INPUT != 0
		x.output = t.flags&C.GGML_TENSOR_FLAG_OUTPUT != 0
		x.viewSrc = -1
		if rec.view_src >= 0 {
			x.viewSrc = pos[rec.view_src]
			x.viewOffs = int64(rec.view_offs)
		}
		last := -1
		for j, s := range rec.src {
			if s >= 0 {
				last = j
			}
		}
		start := len(srcs)
		for j := 0; j <= last; j++ {
			s := int32(rec.src[j])
			if s >= 0 {
				s = pos[s]
			}
			srcs = append(srcs, s)
		}
		x.src = srcs[start:len(srcs):len(srcs)]
		name := sc.name(&t.name)
		if name == "" {
			name = "t" + strconv.Itoa(p)
		}
		if n, dup := seen[name]; dup {
			base := name
			for {
				n++
				name = base + "#" + strconv.Itoa(n)
				if _, taken := seen[name]; !taken {
					break
				}
			}
			seen[base] = n
		}
		seen[name] = 0
		x.name = name
	}
	sc.srcs = srcs
	return ts, pos
}

// zeroed returns (*buf)[:n] with every element zero, growing *buf when it
// is shorter.
func zeroed[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	s := (*buf)[:n]
	clear(s)
	return s
}

// nbytes is ggml_nbytes.
func nbytes(typ int32, ne, nb *[4]int64) int64 {
	for k := range 4 {
		if ne[k] <= 0 {
			return 0
		}
	}
	blck := typeBlck[typ]
	var n int64
	if blck == 1 {
		n = typeSize[typ]
		for k := range 4 {
			n += (ne[k] - 1) * nb[k]
		}
	} else {
		n = ne[0] * nb[0] / blck
		for k := 1; k < 4; k++ {
			n += (ne[k] - 1) * nb[k]
		}
	}
	return n
}

// layout converts ne/nb (innermost first) to shape/strides (outermost
// first); a quantized type's innermost dimension counts blocks.
func layout(x *tensor) (shape, strides []int64, elem int64, err error) {
	return layoutIn(x, make([]int64, 8))
}

// layoutIn is layout with shape and strides in buf, which has 8 elements.
func layoutIn(x *tensor, buf []int64) (shape, strides []int64, elem int64, err error) {
	blck, size := typeBlck[x.typ], typeSize[x.typ]
	if blck <= 0 || size <= 0 {
		return nil, nil, 0, fmt.Errorf("%w: tensor %q has ggml type %d of no size", ErrGraph, x.name, x.typ)
	}
	shape, strides = buf[:4:4], buf[4:8:8]
	for k := range 4 {
		shape[3-k], strides[3-k] = x.ne[k], x.nb[k]
	}
	if blck > 1 {
		if x.ne[0]%blck != 0 {
			return nil, nil, 0, fmt.Errorf("%w: tensor %q: ne[0] %d is not a multiple of %s's block %d",
				ErrGraph, x.name, x.ne[0], typeNames[x.typ], blck)
		}
		shape[3] /= blck
	}
	return shape, strides, size, nil
}

// dense reports whether nb is the dense row-major stride vector of ne.
func dense(x *tensor) bool {
	return ggmltrace.DenseStrides(x.ne[:], x.nb[:], typeBlck[x.typ], typeSize[x.typ])
}

// buildTrace maps tensors (in walk order) to a one-engine trace, ops in
// place as rule says (inplace.go). Under ggmlRule the trace is exactly
// the one ggmltrace.Import maps a ggml-alloc-trace/1 document of the same
// tensors to, with ggml_op_can_inplace of the linked ggml deciding which
// ops are in place. Granule is the buffer type's alignment.
func buildTrace(ts []tensor, name string, granule int64, rule inplaceRule) (*trace.Trace, error) {
	base, err := viewBases(ts)
	if err != nil {
		return nil, err
	}
	// Every step's shape, strides, reads and writes are cut from two slabs
	// sized for the whole graph.
	nNames, nOps := 0, 0
	for i := range ts {
		if ts[i].exec >= 0 && ts[i].isOp() {
			nNames += 1 + len(ts[i].src)
			nOps++
		}
	}
	tb := &traceBuilder{ts: ts, t: &trace.Trace{Name: name, Granule: granule, Engines: []string{Engine}},
		emitted: make([]bool, len(ts)), ints: make([]int64, 0, 8*len(ts)), names: make([]string, 0, nNames)}
	tb.head, tb.next = releasePoints(ts, base)
	// A step per tensor, per op and per release.
	nSteps := len(ts) + nOps
	for _, b := range tb.head {
		for ; b >= 0; b = tb.next[b] {
			nSteps++
		}
	}
	tb.t.Steps = make([]trace.Step, 0, nSteps)
	for i := range ts {
		x := &ts[i]
		if x.exec < 0 || (x.input && x.isAlloc() && !x.isView()) {
			if err := tb.emit(int32(i)); err != nil {
				return nil, err
			}
		}
		if x.exec < 0 {
			tb.release(i)
		}
	}
	for i := range ts {
		x := &ts[i]
		if x.exec < 0 {
			continue
		}
		if err := tb.emit(int32(i)); err != nil {
			return nil, err
		}
		if x.isOp() {
			at := len(tb.names)
			tb.names = append(tb.names, x.name)
			op := trace.Step{Kind: trace.KindOp, Name: x.name, Engine: Engine, Cost: trace.DefaultCost,
				Writes: tb.names[at : at+1 : at+1], InPlace: inplaceOK(ts, base, i, rule)}
			at++
			for _, s := range x.src {
				if s >= 0 && !slices.Contains(tb.names[at:], ts[s].name) {
					tb.names = append(tb.names, ts[s].name)
				}
			}
			if n := len(tb.names); n > at {
				op.Reads = tb.names[at:n:n]
			}
			tb.t.Steps = append(tb.t.Steps, op)
		}
		tb.release(i)
	}
	return tb.t, nil
}

// viewBases returns each tensor's base: itself, or for a view the base of
// its view_src.
func viewBases(ts []tensor) ([]int32, error) {
	base := make([]int32, len(ts))
	for i := range ts {
		x := &ts[i]
		base[i] = int32(i)
		if x.isView() {
			if x.viewSrc < 0 {
				return nil, fmt.Errorf("%w: view %q has no view_src", ErrGraph, x.name)
			}
			base[i] = base[x.viewSrc]
		}
	}
	return base, nil
}

// lastUses returns, for each buffer (by its base's position), the position
// of the last op that writes or reads it (-1 for none); whether it is held
// to the end (an output, or viewed by one); and the position of the last
// input or external tensor, before which nothing is released.
func lastUses(ts []tensor, base []int32) (lastUse []int32, held []bool, prelude int32) {
	n := len(ts)
	lastUse = make([]int32, n)
	for i := range lastUse {
		lastUse[i] = -1
	}
	held = make([]bool, n)
	prelude = -1
	for i := range ts {
		x := &ts[i]
		if x.output {
			held[base[i]] = true
		}
		if x.exec < 0 || x.input {
			prelude = int32(i)
		}
		if !x.isOp() {
			continue
		}
		lastUse[base[i]] = int32(i)
		for _, s := range x.src {
			if s >= 0 {
				lastUse[base[s]] = int32(i)
			}
		}
	}
	return lastUse, held, prelude
}

// releasePoints returns, for each position i, the buffers released after
// it, as lists chained through next from head[i] (no map, two slices):
// each allocated, non-output buffer after its last use (by an op, as the
// op's output or a source), or after it is made when nothing uses it
// (and not before the last input or external tensor).
func releasePoints(ts []tensor, base []int32) (head, next []int32) {
	n := len(ts)
	lastUse, held, prelude := lastUses(ts, base)
	head, next = make([]int32, n), make([]int32, n)
	for i := range head {
		head[i], next[i] = -1, -1
	}
	tail := make([]int32, n)
	for i := range ts {
		if !ts[i].isAlloc() || ts[i].isView() || held[i] {
			continue
		}
		at := lastUse[i]
		if at < 0 {
			at = max(prelude, int32(i))
		}
		if head[at] < 0 {
			head[at] = int32(i)
		} else {
			next[tail[at]] = int32(i)
		}
		tail[at] = int32(i)
	}
	return head, next
}

// traceBuilder appends a graph's steps to a trace: each tensor's
// declaration once, before its first use, and the releases after each
// position.
type traceBuilder struct {
	ts         []tensor
	t          *trace.Trace
	head, next []int32
	emitted    []bool
	// ints and names are slabs the steps' shapes and strides, reads and
	// writes are cut from, each capped at its own length.
	ints  []int64
	names []string
}

// layout is layout(x) with shape and strides in the ints slab.
func (tb *traceBuilder) layout(x *tensor) (shape, strides []int64, elem int64, err error) {
	at := len(tb.ints)
	if at+8 > cap(tb.ints) {
		return layout(x)
	}
	tb.ints = tb.ints[:at+8]
	return layoutIn(x, tb.ints[at:at+8])
}

// release appends the releases due after position at.
func (tb *traceBuilder) release(at int) {
	for b := tb.head[at]; b >= 0; b = tb.next[b] {
		tb.t.Steps = append(tb.t.Steps, trace.Step{Kind: trace.KindRelease, Name: tb.ts[b].name})
	}
}

// emit appends tensor i's declaration (a view after its view_src's), once.
func (tb *traceBuilder) emit(i int32) error {
	if tb.emitted[i] {
		return nil
	}
	tb.emitted[i] = true
	x := &tb.ts[i]
	switch {
	case x.isView():
		if err := tb.emit(x.viewSrc); err != nil {
			return err
		}
		shape, strides, elem, err := tb.layout(x)
		if err != nil {
			return err
		}
		tb.t.Steps = append(tb.t.Steps, trace.Step{Kind: trace.KindView, Name: x.name, Of: tb.ts[x.viewSrc].name,
			Offset: x.viewOffs, Shape: shape, Strides: strides, Elem: elem})
	case x.kind == kindExt:
		tb.t.Steps = append(tb.t.Steps, trace.Step{Kind: trace.KindExternal, Name: x.name, Size: max(x.nbytes, x.allocSize)})
	default:
		size := x.nbytes
		if x.allocSize > 0 {
			size = x.allocSize
		}
		if size <= 0 { // a tensor of no elements still gets an address
			size = 1
		}
		s := trace.Step{Kind: trace.KindAlloc, Name: x.name, Size: size, Engine: Engine}
		at := len(tb.ints)
		if shape, _, elem, err := tb.layout(x); err == nil && dense(x) {
			if p, ok := checked.Product(shape, elem); ok && p == size {
				s.Shape, s.Elem = shape, elem
				at = len(tb.ints)
			}
		}
		tb.ints = tb.ints[:at] // the slots of a shape not kept are reused
		tb.t.Steps = append(tb.t.Steps, s)
	}
	return nil
}

// ReadOptions tunes ReadGraph.
type ReadOptions struct {
	// Name is the trace's name ("ggml-graph" when empty).
	Name string
	// BufferType is the ggml_backend_buffer_type_t the graph would be
	// allocated from: it gives the alignment (the trace's granule) and each
	// tensor's allocation size. Nil means ggml's CPU buffer type.
	BufferType unsafe.Pointer
}

// ReadGraph maps a ggml graph (a struct ggml_cgraph *, built in a no_alloc
// context) to a subarena-trace/v1 trace on one engine, as ggmltrace.Import
// maps ggml-alloc's JSON export of the same graph (see the package
// documentation), with ggml's in-place rule (an Allocator on the CPU buffer
// type adds the verified kernels, inplace.go). Tensors that already have
// data or a buffer are external; the others are the allocator's to place.
func ReadGraph(graph unsafe.Pointer, opts ReadOptions) (*trace.Trace, error) {
	sc, buft, err := newScannerFor(opts.BufferType)
	if err != nil {
		return nil, err
	}
	defer sc.free()
	if err := sc.scan(graph); err != nil {
		return nil, err
	}
	ts, _ := sc.tensors()
	name := opts.Name
	if name == "" {
		name = "ggml-graph"
	}
	return buildTrace(ts, name, bufferAlignment(buft), ggmlRule)
}

// Dump writes a ggml graph as a subarena-trace/v1 document (trace.Write), for
// `subarena plan`, `check` and `viz`.
func Dump(w io.Writer, graph unsafe.Pointer, opts ReadOptions) error {
	t, err := ReadGraph(graph, opts)
	if err != nil {
		return err
	}
	return trace.Write(w, t)
}

// newScannerFor returns a scanner for buffer type buft, or for ggml's CPU
// buffer type when buft is nil, and the buffer type it scans for.
func newScannerFor(buft unsafe.Pointer) (*scanner, unsafe.Pointer, error) {
	if buft == nil {
		buft = cpuBufferType()
	}
	sc, err := newScanner(buft)
	return sc, buft, err
}

func bufferAlignment(buft unsafe.Pointer) int64 {
	return int64(C.ggml_backend_buft_get_alignment(C.ggml_backend_buffer_type_t(buft)))
}

// graphNodes returns the graph's nodes (each a struct ggml_tensor *), in
// execution order.
func graphNodes(graph unsafe.Pointer) []unsafe.Pointer {
	g := (*C.struct_ggml_cgraph)(graph)
	out := make([]unsafe.Pointer, int(C.ggml_graph_n_nodes(g)))
	for i := range out {
		out[i] = unsafe.Pointer(C.ggml_graph_node(g, C.int(i)))
	}
	return out
}
