package trace

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// GGMLFormat is the "format" of a ggml graph-allocator trace.
const GGMLFormat = "ggml-alloc-trace/1"

// GGMLEngine is the one engine of a trace imported from ggml.
const GGMLEngine = "compute"

// ggmlTrace holds the fields of a ggml-alloc-trace/1 document the importer needs; the
// format's other fields (analysis, notes, timings) are ignored.
type ggmlTrace struct {
	Format    string       `json:"format"`
	Config    string       `json:"config"`
	Alignment int64        `json:"alignment"`
	Tensors   []ggmlTensor `json:"tensors"`
}

type ggmlTensor struct {
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

// ggmlInplaceOps are the ops ggml's graph allocator may run in place over an input
// (ggml_op_can_inplace, with the backward forms).
var ggmlInplaceOps = map[string]bool{
	"SCALE": true, "DIAG_MASK_ZERO": true, "DIAG_MASK_INF": true, "ADD": true, "ADD_ID": true,
	"ADD1": true, "SUB": true, "MUL": true, "DIV": true, "SQR": true, "SQRT": true, "LOG": true,
	"UNARY": true, "ROPE": true, "ROPE_BACK": true, "SILU_BACK": true, "RMS_NORM": true,
	"RMS_NORM_BACK": true, "SOFT_MAX": true, "SOFT_MAX_BACK": true,
}

// ggmlType is a ggml tensor type: blck elements take size bytes.
type ggmlType struct{ blck, size int64 }

var ggmlTypes = map[string]ggmlType{
	"f32": {1, 4}, "f16": {1, 2}, "bf16": {1, 2}, "f64": {1, 8},
	"i8": {1, 1}, "i16": {1, 2}, "i32": {1, 4}, "i64": {1, 8},
	"q4_0": {32, 18}, "q4_1": {32, 20}, "q5_0": {32, 22}, "q5_1": {32, 24},
	"q8_0": {32, 34}, "q8_1": {32, 36}, "q2_K": {256, 84}, "q3_K": {256, 110},
	"q4_K": {256, 144}, "q5_K": {256, 176}, "q6_K": {256, 210}, "q8_K": {256, 292},
}

// ggmlTensor kinds, as the importer maps them.
const (
	ggmlAlloc    = iota // own compute-buffer tensor: an alloc step
	ggmlExternal        // weights, kv cache: an external step
	ggmlView            // VIEW/RESHAPE/PERMUTE/TRANSPOSE, or a node written through a view
)

// ImportGGML turns a ggml-alloc-trace/1 document into a one-engine trace, as TRACE.md's
// importer section says: granule = alignment; ne/nb (innermost first) become shape and
// strides reversed, with quantized types counted in blocks; tensors of the weights or
// kv_cache buffers become externals; compute leafs and inputs are allocated before the
// first op; VIEW, RESHAPE, PERMUTE and TRANSPOSE tensors become view steps of view_src at
// view_offs; every other node is an op reading its src tensors and writing its own tensor
// (a fresh buffer allocated just before it, or, for a node that is itself a view, that
// view of view_src); ops in ggml's in-place list are inplace; every compute buffer is
// released right after the last op using it directly or through a view, unless it (or a
// view of it) is an output.
func ImportGGML(data []byte, name string) (*Trace, error) {
	var g ggmlTrace
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("ggml: %w: invalid UTF-8", ErrSyntax)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("ggml: %w: %v", ErrSyntax, err)
	}
	if g.Format != GGMLFormat {
		return nil, fmt.Errorf("ggml: %w: %q", ErrFormat, g.Format)
	}
	if g.Alignment <= 0 || g.Alignment&(g.Alignment-1) != 0 {
		return nil, fmt.Errorf("ggml: %w: alignment %d", ErrInvalidGranule, g.Alignment)
	}
	if name == "" {
		name = "ggml-" + g.Config
	}
	im := &ggmlImporter{g: &g, t: &Trace{Name: name, Granule: g.Alignment, Engines: []string{GGMLEngine}},
		byName: make(map[string]int, len(g.Tensors))}
	if err := im.run(); err != nil {
		return nil, fmt.Errorf("ggml: %w", err)
	}
	if err := im.t.Validate(); err != nil {
		return nil, fmt.Errorf("ggml: %w", err)
	}
	return im.t, nil
}

type ggmlImporter struct {
	g      *ggmlTrace
	t      *Trace
	byName map[string]int
	kind   []int
	base   []int // index of the buffer tensor a tensor's bytes belong to
}

func (im *ggmlImporter) run() error {
	ts := im.g.Tensors
	for i := range ts {
		if ts[i].Name == "" {
			return fmt.Errorf("%w: tensor %d has no name", ErrInvalidName, i)
		}
		if _, dup := im.byName[ts[i].Name]; dup {
			return fmt.Errorf("%w: tensor %q", ErrDuplicateName, ts[i].Name)
		}
		im.byName[ts[i].Name] = i
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
				return fmt.Errorf("%w: %q reads unknown tensor %q", ErrUnknownName, ts[i].Name, *s)
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
			op := Step{Kind: KindOp, Name: ts[i].Name, Engine: GGMLEngine, Cost: DefaultCost,
				Writes: []string{ts[i].Name}, Inplace: ggmlInplaceOps[ts[i].Op]}
			for _, s := range ts[i].Src {
				if s != nil && !contains(op.Reads, *s) {
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
		im.t.Steps = append(im.t.Steps, Step{Kind: KindRelease, Name: im.g.Tensors[b].Name})
	}
}

// classify sets the kind and base buffer of tensor i (its view_src is classified first:
// the walk order puts sources before their users).
func (im *ggmlImporter) classify(i int) error {
	x := &im.g.Tensors[i]
	switch {
	case ggmlViewOps[x.Op] || x.ViewSrc != nil:
		if x.ViewSrc == nil {
			return fmt.Errorf("%w: view %q has no view_src", ErrMissingKey, x.Name)
		}
		j, ok := im.byName[*x.ViewSrc]
		if !ok || j == i {
			return fmt.Errorf("%w: %q views unknown tensor %q", ErrUnknownName, x.Name, *x.ViewSrc)
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
		im.t.Steps = append(im.t.Steps, Step{Kind: KindExternal, Name: x.Name, Size: size})
	case ggmlAlloc:
		size := x.Nbytes
		if x.AllocSize != nil && *x.AllocSize > 0 {
			size = *x.AllocSize
		}
		s := Step{Kind: KindAlloc, Name: x.Name, Size: size, Engine: GGMLEngine}
		if shape, _, elem, err := ggmlLayout(x); err == nil && ggmlDense(x) {
			if n, ok := product(shape, elem); ok && n == size {
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
		im.t.Steps = append(im.t.Steps, Step{Kind: KindView, Name: x.Name, Of: *x.ViewSrc,
			Offset: x.ViewOffs, Shape: shape, Strides: strides, Elem: elem})
	}
	return nil
}

// ggmlLayout converts ne/nb (innermost first) to shape/strides (outermost first); a
// quantized type's innermost dimension counts blocks of blck elements.
func ggmlLayout(x *ggmlTensor) (shape, strides []int64, elem int64, err error) {
	ty, ok := ggmlTypes[x.Type]
	if !ok {
		return nil, nil, 0, fmt.Errorf("%w: tensor %q has unknown ggml type %q", ErrFormat, x.Name, x.Type)
	}
	if len(x.Ne) != len(x.Nb) || len(x.Ne) == 0 {
		return nil, nil, 0, fmt.Errorf("%w: tensor %q has %d ne and %d nb", ErrShape, x.Name, len(x.Ne), len(x.Nb))
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
				ErrShape, x.Name, x.Ne[0], x.Type, ty.blck)
		}
		shape[n-1] /= ty.blck
	}
	return shape, strides, ty.size, nil
}

// ggmlDense reports whether nb is the dense row-major stride vector of ne.
func ggmlDense(x *ggmlTensor) bool {
	ty, ok := ggmlTypes[x.Type]
	if !ok || len(x.Ne) != len(x.Nb) || len(x.Ne) == 0 || x.Nb[0] != ty.size {
		return false
	}
	want := ty.size
	for k := range x.Ne {
		if k > 0 {
			prev := x.Ne[k-1]
			if k == 1 {
				prev /= ty.blck
			}
			var ok bool
			if want, ok = mulCheck(want, prev); !ok {
				return false
			}
			if x.Nb[k] != want && x.Ne[k] != 1 {
				return false
			}
		}
	}
	return true
}

func product(shape []int64, elem int64) (int64, bool) {
	n := elem
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		var ok bool
		if n, ok = mulCheck(n, d); !ok {
			return 0, false
		}
	}
	return n, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
