package ggmltrace

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// Format is the "format" of a ggml graph-allocator trace.
const Format = "ggml-alloc-trace/1"

// Engine is the one engine of a trace imported from ggml.
const Engine = "compute"

// Document holds the fields of a ggml-alloc-trace/1 document that Import reads; the
// format's other fields (analysis, notes, timings) are ignored. Marshalled with
// encoding/json, a Document is a ggml-alloc-trace/1 document with those fields only.
type Document struct {
	Format    string   `json:"format"`
	Config    string   `json:"config"`
	Alignment int64    `json:"alignment"`
	Tensors   []Tensor `json:"tensors"`
}

// Tensor holds the fields of one tensor of a ggml-alloc-trace/1 document that Import
// reads. Ne and Nb are innermost first, as ggml has them; Src names the sources (nil for
// an empty slot); ExecIndex is the node's place in the graph, -1 for a leaf.
type Tensor struct {
	Name      string    `json:"name"`
	Op        string    `json:"op"`
	Type      string    `json:"type"`
	Ne        []int64   `json:"ne"`
	Nb        []int64   `json:"nb"`
	Nbytes    int64     `json:"nbytes"`
	AllocSize *int64    `json:"alloc_size"`
	Src       []*string `json:"src"`
	ViewSrc   *string   `json:"view_src"`
	ViewOffs  int64     `json:"view_offs"`
	IsInput   bool      `json:"is_input"`
	IsOutput  bool      `json:"is_output"`
	Buffer    string    `json:"buffer"`
	ExecIndex int64     `json:"exec_index"`
}

// ggmlViewOps are the ops that only take a view (no kernel runs).
var ggmlViewOps = map[string]bool{"VIEW": true, "RESHAPE": true, "PERMUTE": true, "TRANSPOSE": true}

// ggmlType is a ggml tensor type: blck elements take size bytes.
type ggmlType struct{ blck, size int64 }

// ggmlTypes are ggml's tensor types by the name ggml_type_name gives them, with their
// block sizes (elements) and type sizes (bytes per block), as ggml's type traits have
// them.
var ggmlTypes = map[string]ggmlType{
	"f32": {1, 4}, "f16": {1, 2}, "bf16": {1, 2}, "f64": {1, 8},
	"i8": {1, 1}, "i16": {1, 2}, "i32": {1, 4}, "i64": {1, 8},
	"q4_0": {32, 18}, "q4_1": {32, 20}, "q5_0": {32, 22}, "q5_1": {32, 24},
	"q8_0": {32, 34}, "q8_1": {32, 36}, "q2_K": {256, 84}, "q3_K": {256, 110},
	"q4_K": {256, 144}, "q5_K": {256, 176}, "q6_K": {256, 210}, "q8_K": {256, 292},
	"iq2_xxs": {256, 66}, "iq2_xs": {256, 74}, "iq2_s": {256, 82}, "iq3_xxs": {256, 98},
	"iq3_s": {256, 110}, "iq1_s": {256, 50}, "iq1_m": {256, 56}, "iq4_nl": {32, 18},
	"iq4_xs": {256, 136}, "tq1_0": {256, 54}, "tq2_0": {256, 66}, "mxfp4": {32, 17},
}

// ggmlTypeNames lists the known type names, sorted, for error messages.
func ggmlTypeNames() string {
	names := make([]string, 0, len(ggmlTypes))
	for n := range ggmlTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Tensor kinds, as the importer maps them.
const (
	ggmlAlloc    = iota // own compute-buffer tensor: an alloc step
	ggmlExternal        // weights, kv cache: an external step
	ggmlView            // VIEW/RESHAPE/PERMUTE/TRANSPOSE, or a node written through a view
)

// Import turns a ggml-alloc-trace/1 document into a one-engine trace, as docs/TRACE.md's
// importer section says: granule = alignment; ne/nb (innermost first) become shape and
// strides reversed, with quantized types counted in blocks; tensors of the weights or
// kv_cache buffers become externals; compute leafs and inputs are allocated before the
// first op; VIEW, RESHAPE, PERMUTE and TRANSPOSE tensors become view steps of view_src at
// view_offs; every other node is an op reading its src tensors and writing its own tensor
// (a fresh buffer allocated just before it, or, for a node that is itself a view, that
// view of view_src); a node is inplace as ggml's rule says (CanInplace); every compute buffer is
// released right after the last op using it directly or through a view, unless it (or a
// view of it) is an output.
//
// Every tensor is validated first (see docs/TRACE.md, "ggml-alloc-trace/1"): a known
// type, ne and nb of 1 to 4 dimensions, every ne >= 1 (an empty tensor, which ggml gives
// no bytes, is not imported), nb >= 0 and consistent with the type (a quantized type's
// nb[0] is its block's size, ne[0] a multiple of its block; a tensor that is not a view
// has ggml's dense strides, a dimension of extent 1 excepted), element counts and byte
// spans within int64, nbytes equal to ggml_nbytes, alloc_size (when not null) at least
// nbytes for a tensor that is not a view, and a view's view_src a tensor that is not a
// view, with the view's bytes inside it. A tensor that breaks a rule is reported as a
// *TensorError. JSON errors carry their line and column.
func Import(data []byte, name string) (*trace.Trace, error) {
	p, err := ImportProgram(data, name)
	if err != nil {
		return nil, err
	}
	return p.Trace, nil
}

// ImportProgram is Import followed by Resolve, at the cost of Import alone: validating
// the trace resolves it, and the Program that validation built is the one returned.
func ImportProgram(data []byte, name string) (*trace.Program, error) {
	var g Document
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("ggml: %w: invalid UTF-8", trace.ErrSyntax)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, ggmlJSONError(data, err)
	}
	if g.Format != Format {
		return nil, trace.UnsupportedFormat(fmt.Sprintf("ggml: unsupported format %q; this reader knows %s", g.Format,
			trace.Format+" and "+Format))
	}
	if g.Alignment <= 0 || g.Alignment&(g.Alignment-1) != 0 {
		return nil, fmt.Errorf("ggml: %w: alignment %d", trace.ErrInvalidGranule, g.Alignment)
	}
	if name == "" {
		name = "ggml-" + g.Config
	}
	im := &ggmlImporter{g: &g, t: &trace.Trace{Name: name, Granule: g.Alignment, Engines: []string{Engine}},
		byName: make(map[string]int, len(g.Tensors))}
	if err := im.run(); err != nil {
		return nil, fmt.Errorf("ggml: %w", err)
	}
	p, err := im.t.Resolve()
	if err != nil {
		return nil, fmt.Errorf("ggml: %w", err)
	}
	return p, nil
}

// ggmlJSONError places a json.Unmarshal error on data at its line and column.
func ggmlJSONError(data []byte, err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		off, _ := tracejson.SyntaxOffset(data)
		line, col := tracejson.LineCol(data, off)
		return fmt.Errorf("%w: ggml: line %d, column %d: %s", trace.ErrSyntax, line, col, se.Error())
	case errors.As(err, &te):
		// Offset is where the value ends; point at its last byte.
		line, col := tracejson.LineCol(data, te.Offset-1)
		what := te.Field
		if what == "" {
			what = "the document"
		}
		return fmt.Errorf("%w: ggml: line %d, column %d: %s: %s where %s is required", trace.ErrSyntax, line, col,
			what, te.Value, te.Type)
	}
	return fmt.Errorf("ggml: %w: %v", trace.ErrSyntax, err)
}

type ggmlImporter struct {
	g      *Document
	t      *trace.Trace
	byName map[string]int
	kind   []int
	base   []int // index of the buffer tensor a tensor's bytes belong to
}

func (im *ggmlImporter) run() error {
	ts := im.g.Tensors
	for i := range ts {
		if ts[i].Name == "" {
			return fmt.Errorf("%w: tensor %d has no name", trace.ErrInvalidName, i)
		}
		if _, dup := im.byName[ts[i].Name]; dup {
			return fmt.Errorf("%w: tensor %q", trace.ErrDuplicateName, ts[i].Name)
		}
		im.byName[ts[i].Name] = i
	}
	for i := range ts {
		if err := im.check(i); err != nil {
			return err
		}
	}
	// Walk order: leafs (exec_index -1) first, then nodes in execution order.
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ts[order[a]].ExecIndex < ts[order[b]].ExecIndex })
	im.kind = make([]int, len(ts))
	im.base = make([]int, len(ts))
	for _, i := range order {
		if err := im.classify(i); err != nil {
			return err
		}
	}
	// Ops, their uses and each buffer's last user.
	isOp := func(i int) bool { return ts[i].ExecIndex >= 0 && !ggmlViewOps[ts[i].Op] }
	lastUse := make([]int, len(ts))
	for i := range lastUse {
		lastUse[i] = -1
	}
	held := make([]bool, len(ts)) // never released: outputs and what outputs view
	for pos, i := range order {
		if ts[i].IsOutput {
			held[im.base[i]] = true
		}
		if !isOp(i) {
			continue
		}
		lastUse[im.base[i]] = pos
		for _, s := range ts[i].Src {
			if s == nil {
				continue
			}
			j, ok := im.byName[*s]
			if !ok {
				return fmt.Errorf("%w: %q reads unknown tensor %q", trace.ErrUnknownName, ts[i].Name, *s)
			}
			lastUse[im.base[j]] = pos
		}
	}
	releaseAfter := map[int][]int{} // position -> buffers released after it
	prelude := -1                   // position of the last leaf/input, for unused prelude buffers
	for pos, i := range order {
		if ts[i].ExecIndex < 0 || ts[i].IsInput {
			prelude = max(prelude, pos)
		}
	}
	for _, i := range order {
		if im.kind[i] != ggmlAlloc || held[i] {
			continue
		}
		at := lastUse[i]
		if at < 0 {
			at = max(prelude, im.allocPos(i, order))
		}
		releaseAfter[at] = append(releaseAfter[at], i)
	}
	// Emit: the prelude (leafs and inputs), then nodes.
	emitted := make([]bool, len(ts))
	for pos, i := range order {
		if ts[i].ExecIndex < 0 || (ts[i].IsInput && im.kind[i] == ggmlAlloc) {
			if err := im.emitData(i, emitted); err != nil {
				return err
			}
		}
		if ts[i].ExecIndex < 0 {
			im.release(releaseAfter[pos])
		}
	}
	for pos, i := range order {
		if ts[i].ExecIndex < 0 {
			continue
		}
		if err := im.emitData(i, emitted); err != nil {
			return err
		}
		if isOp(i) {
			op := trace.Step{Kind: trace.KindOp, Name: ts[i].Name, Engine: Engine, Cost: trace.DefaultCost,
				Writes: []string{ts[i].Name}, InPlace: im.canInplace(i)}
			for _, s := range ts[i].Src {
				if s != nil && !slices.Contains(op.Reads, *s) {
					op.Reads = append(op.Reads, *s)
				}
			}
			im.t.Steps = append(im.t.Steps, op)
		}
		im.release(releaseAfter[pos])
	}
	return nil
}

func (im *ggmlImporter) allocPos(i int, order []int) int {
	for pos, j := range order {
		if j == i {
			return pos
		}
	}
	return 0
}

func (im *ggmlImporter) release(bufs []int) {
	for _, b := range bufs {
		im.t.Steps = append(im.t.Steps, trace.Step{Kind: trace.KindRelease, Name: im.g.Tensors[b].Name})
	}
}

// classify sets the kind and base buffer of tensor i (its view_src is classified first:
// the walk order puts sources before their users).
func (im *ggmlImporter) classify(i int) error {
	x := &im.g.Tensors[i]
	switch {
	case ggmlViewOps[x.Op] || x.ViewSrc != nil:
		if x.ViewSrc == nil {
			return fmt.Errorf("%w: view %q has no view_src", trace.ErrMissingKey, x.Name)
		}
		j, ok := im.byName[*x.ViewSrc]
		if !ok || j == i {
			return fmt.Errorf("%w: %q views unknown tensor %q", trace.ErrUnknownName, x.Name, *x.ViewSrc)
		}
		im.kind[i] = ggmlView
		im.base[i] = im.base[j]
	case x.Buffer != "compute":
		im.kind[i] = ggmlExternal
		im.base[i] = i
	default:
		im.kind[i] = ggmlAlloc
		im.base[i] = i
	}
	return nil
}

// emitData emits the step that brings tensor i's data into being, once.
func (im *ggmlImporter) emitData(i int, emitted []bool) error {
	if emitted[i] {
		return nil
	}
	emitted[i] = true
	x := &im.g.Tensors[i]
	switch im.kind[i] {
	case ggmlExternal:
		size := x.Nbytes
		if x.AllocSize != nil && *x.AllocSize > size {
			size = *x.AllocSize
		}
		im.t.Steps = append(im.t.Steps, trace.Step{Kind: trace.KindExternal, Name: x.Name, Size: size})
	case ggmlAlloc:
		size := x.Nbytes
		if x.AllocSize != nil && *x.AllocSize > 0 {
			size = *x.AllocSize
		}
		s := trace.Step{Kind: trace.KindAlloc, Name: x.Name, Size: size, Engine: Engine}
		if shape, _, elem, err := ggmlLayout(x); err == nil && ggmlDense(x) {
			if n, ok := checked.Product(shape, elem); ok && n == size {
				s.Shape, s.Elem = shape, elem
			}
		}
		im.t.Steps = append(im.t.Steps, s)
	case ggmlView:
		j := im.byName[*x.ViewSrc]
		if err := im.emitData(j, emitted); err != nil {
			return err
		}
		shape, strides, elem, err := ggmlLayout(x)
		if err != nil {
			return err
		}
		im.t.Steps = append(im.t.Steps, trace.Step{Kind: trace.KindView, Name: x.Name, Of: *x.ViewSrc,
			Offset: x.ViewOffs, Shape: shape, Strides: strides, Elem: elem})
	}
	return nil
}

// ggmlLayout converts ne/nb (innermost first) to shape/strides (outermost first); a
// quantized type's innermost dimension counts blocks of blck elements.
func ggmlLayout(x *Tensor) (shape, strides []int64, elem int64, err error) {
	ty, ok := ggmlTypes[x.Type]
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: tensor %q has unknown ggml type %q", trace.ErrFormat, x.Name, x.Type)
	}
	if len(x.Ne) != len(x.Nb) || len(x.Ne) == 0 {
		return nil, nil, 0, fmt.Errorf("%w: tensor %q has %d ne and %d nb", trace.ErrShape, x.Name, len(x.Ne), len(x.Nb))
	}
	n := len(x.Ne)
	shape = make([]int64, n)
	strides = make([]int64, n)
	for k := 0; k < n; k++ {
		shape[n-1-k], strides[n-1-k] = x.Ne[k], x.Nb[k]
	}
	if ty.blck > 1 {
		if x.Ne[0]%ty.blck != 0 {
			return nil, nil, 0, fmt.Errorf("%w: tensor %q: ne[0] %d is not a multiple of %s's block %d",
				trace.ErrShape, x.Name, x.Ne[0], x.Type, ty.blck)
		}
		shape[n-1] /= ty.blck
	}
	return shape, strides, ty.size, nil
}
