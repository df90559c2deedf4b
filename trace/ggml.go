package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
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
// (ggml_op_can_inplace, with the backward forms; FILL and CLAMP as newer ggml has them).
var ggmlInplaceOps = map[string]bool{
	"SCALE": true, "DIAG_MASK_ZERO": true, "DIAG_MASK_INF": true, "ADD": true, "ADD_ID": true,
	"ADD1": true, "SUB": true, "MUL": true, "DIV": true, "SQR": true, "SQRT": true, "LOG": true,
	"UNARY": true, "ROPE": true, "ROPE_BACK": true, "SILU_BACK": true, "RMS_NORM": true,
	"RMS_NORM_BACK": true, "SOFT_MAX": true, "SOFT_MAX_BACK": true, "FILL": true, "CLAMP": true,
}

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

// The rules of a ggml-alloc-trace/1 tensor, named by TensorError.Rule.
const (
	// RuleGGMLType: the type is one of ggml's (by ggml_type_name).
	RuleGGMLType = "known ggml type"
	// RuleGGMLDims: ne and nb have the same length, 1 to 4 (GGML_MAX_DIMS).
	RuleGGMLDims = "ne and nb of 1 to 4 dimensions"
	// RuleGGMLNe: every ne is at least 1.
	RuleGGMLNe = "ne >= 1"
	// RuleGGMLBlock: a quantized type's ne[0] is a multiple of its block size.
	RuleGGMLBlock = "ne[0] a multiple of the block size"
	// RuleGGMLNb: every nb is >= 0, a quantized type's nb[0] is its block's byte size,
	// and a tensor that is not a view has ggml's dense strides.
	RuleGGMLNb = "nb consistent with ne and type"
	// RuleGGMLNbytes: nbytes is ggml_nbytes of ne, nb and type.
	RuleGGMLNbytes = "nbytes = ggml_nbytes(ne, nb, type)"
	// RuleGGMLAllocSize: a tensor that is not a view has alloc_size >= nbytes (or null).
	RuleGGMLAllocSize = "alloc_size >= nbytes"
	// RuleGGMLViewSrc: a view's view_src names a tensor that is not itself a view (ggml
	// collapses views of views onto their base).
	RuleGGMLViewSrc = "view_src is a base tensor"
	// RuleGGMLViewBounds: a view's bytes [view_offs, view_offs + nbytes) lie inside its
	// base's.
	RuleGGMLViewBounds = "view inside its base"
)

// TensorError is a tensor of a ggml-alloc-trace/1 document that breaks a rule of the
// format: its index in "tensors", its name, the rule (one of the RuleGGML* constants or
// RuleOf(ErrOverflow)) and an error matching one of the package's sentinels through
// errors.Is (ErrFormat, ErrShape, ErrOverflow, ErrInvalidSize, ErrOutOfBounds).
type TensorError struct {
	Index int
	Name  string
	Rule  string
	Err   error
}

// Error formats the error as "ggml: tensor I "NAME": rule: detail" (the sentinel's own
// text left out, as in StepError).
func (e *TensorError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	for _, s := range sentinels {
		if prefix := s.Error() + ": "; errors.Is(e.Err, s) && strings.HasPrefix(msg, prefix) {
			msg = msg[len(prefix):]
			break
		}
	}
	return fmt.Sprintf("ggml: tensor %d %s: %s: %s", e.Index, quote(e.Name), e.Rule, msg)
}

// Unwrap returns the underlying error, so errors.Is matches its sentinel.
func (e *TensorError) Unwrap() error { return e.Err }

// ggmlTensor kinds, as the importer maps them.
const (
	ggmlAlloc    = iota // own compute-buffer tensor: an alloc step
	ggmlExternal        // weights, kv cache: an external step
	ggmlView            // VIEW/RESHAPE/PERMUTE/TRANSPOSE, or a node written through a view
)

// ImportGGML turns a ggml-alloc-trace/1 document into a one-engine trace, as docs/TRACE.md's
// importer section says: granule = alignment; ne/nb (innermost first) become shape and
// strides reversed, with quantized types counted in blocks; tensors of the weights or
// kv_cache buffers become externals; compute leafs and inputs are allocated before the
// first op; VIEW, RESHAPE, PERMUTE and TRANSPOSE tensors become view steps of view_src at
// view_offs; every other node is an op reading its src tensors and writing its own tensor
// (a fresh buffer allocated just before it, or, for a node that is itself a view, that
// view of view_src); ops in ggml's in-place list are inplace; every compute buffer is
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
func ImportGGML(data []byte, name string) (*Trace, error) {
	t, _, err := importGGML(data, name)
	return t, err
}

// importGGML is ImportGGML returning the Program its validation resolved too.
func importGGML(data []byte, name string) (*Trace, *Program, error) {
	var g ggmlTrace
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("ggml: %w: invalid UTF-8", ErrSyntax)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, nil, ggmlJSONError(data, err)
	}
	if g.Format != GGMLFormat {
		return nil, nil, &formatError{msg: fmt.Sprintf("ggml: unsupported format %q; this reader knows %s", g.Format, knownFormats),
			is: []error{ErrFormat, ErrUnknownFormat}}
	}
	if g.Alignment <= 0 || g.Alignment&(g.Alignment-1) != 0 {
		return nil, nil, fmt.Errorf("ggml: %w: alignment %d", ErrInvalidGranule, g.Alignment)
	}
	if name == "" {
		name = "ggml-" + g.Config
	}
	im := &ggmlImporter{g: &g, t: &Trace{Name: name, Granule: g.Alignment, Engines: []string{GGMLEngine}},
		byName: make(map[string]int, len(g.Tensors))}
	if err := im.run(); err != nil {
		return nil, nil, fmt.Errorf("ggml: %w", err)
	}
	p, err := im.t.Resolve()
	if err != nil {
		return nil, nil, fmt.Errorf("ggml: %w", err)
	}
	return im.t, p, nil
}

// ggmlJSONError places a json.Unmarshal error on data at its line and column.
func ggmlJSONError(data []byte, err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		off, _ := syntaxOffset(data)
		line, col := lineCol(data, off)
		return prefixed(fmt.Sprintf("ggml: line %d, column %d", line, col), fmt.Errorf("%w: %s", ErrSyntax, se.Error()))
	case errors.As(err, &te):
		// Offset is where the value ends; point at its last byte.
		line, col := lineCol(data, te.Offset-1)
		what := te.Field
		if what == "" {
			what = "the document"
		}
		return prefixed(fmt.Sprintf("ggml: line %d, column %d", line, col),
			fmt.Errorf("%w: %s: %s where %s is required", ErrSyntax, what, te.Value, te.Type))
	}
	return fmt.Errorf("ggml: %w: %v", ErrSyntax, err)
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

// check validates tensor i against ggml's rules (see ImportGGML).
func (im *ggmlImporter) check(i int) error {
	x := &im.g.Tensors[i]
	fail := func(rule string, sentinel error, format string, args ...any) error {
		return &TensorError{Index: i, Name: x.Name, Rule: rule,
			Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
	}
	ty, ok := ggmlTypes[x.Type]
	if !ok {
		return fail(RuleGGMLType, ErrFormat, "type %s is not one of ggml's (%s)", quote(x.Type), ggmlTypeNames())
	}
	n := len(x.Ne)
	if n != len(x.Nb) || n == 0 || n > 4 {
		return fail(RuleGGMLDims, ErrShape, "%d ne and %d nb", len(x.Ne), len(x.Nb))
	}
	elems := int64(1)
	for k, ne := range x.Ne {
		if ne < 1 {
			return fail(RuleGGMLNe, ErrShape, "ne[%d] = %d: every dimension has at least one element "+
				"(an empty tensor has no bytes to place)", k, ne)
		}
		if elems, ok = mulCheck(elems, ne); !ok {
			return fail(RuleOf(ErrOverflow), ErrOverflow, "ne %v: the element count overflows int64", x.Ne)
		}
	}
	for k, nb := range x.Nb {
		if nb < 0 {
			return fail(RuleGGMLNb, ErrShape, "nb[%d] = %d is negative", k, nb)
		}
	}
	if x.Ne[0]%ty.blck != 0 {
		return fail(RuleGGMLBlock, ErrShape, "ne[0] = %d is not a multiple of %s's block of %d elements",
			x.Ne[0], x.Type, ty.blck)
	}
	if ty.blck > 1 && x.Nb[0] != ty.size {
		return fail(RuleGGMLNb, ErrShape, "nb[0] = %d, but a %s block takes %d bytes", x.Nb[0], x.Type, ty.size)
	}
	view := ggmlViewOps[x.Op] || x.ViewSrc != nil
	if !view {
		want := make([]int64, n)
		want[0] = ty.size
		for k := 1; k < n; k++ {
			prev := x.Ne[k-1]
			if k == 1 {
				prev /= ty.blck
			}
			if want[k], ok = mulCheck(want[k-1], prev); !ok {
				return fail(RuleOf(ErrOverflow), ErrOverflow, "ne %v of %s: the byte size overflows int64", x.Ne, x.Type)
			}
		}
		for k := range n {
			if x.Nb[k] != want[k] && x.Ne[k] != 1 {
				return fail(RuleGGMLNb, ErrShape, "nb %v is not the dense layout %v of ne %v of %s "+
					"(a tensor that is not a view is dense)", x.Nb, want, x.Ne, x.Type)
			}
		}
	}
	nbytes, ok := ggmlNbytes(x, ty)
	if !ok {
		return fail(RuleOf(ErrOverflow), ErrOverflow, "ne %v and nb %v span more bytes than int64 counts", x.Ne, x.Nb)
	}
	if x.Nbytes != nbytes {
		return fail(RuleGGMLNbytes, ErrInvalidSize, "nbytes = %d, but ne %v and nb %v of %s span %d bytes",
			x.Nbytes, x.Ne, x.Nb, x.Type, nbytes)
	}
	if !view {
		if x.AllocSize != nil && *x.AllocSize < nbytes {
			return fail(RuleGGMLAllocSize, ErrInvalidSize, "alloc_size = %d is less than nbytes = %d", *x.AllocSize, nbytes)
		}
		return nil
	}
	if x.ViewSrc == nil {
		return nil // classify reports the missing view_src
	}
	j, ok := im.byName[*x.ViewSrc]
	if !ok || j == i {
		return nil // classify reports the unknown view_src
	}
	base := &im.g.Tensors[j]
	if base.ViewSrc != nil || ggmlViewOps[base.Op] {
		return fail(RuleGGMLViewSrc, ErrShape, "view_src %s is itself a view (of %s); ggml collapses views of views onto their base",
			quote(base.Name), viewSrcName(base))
	}
	size := base.Nbytes
	if base.AllocSize != nil && *base.AllocSize > size {
		size = *base.AllocSize
	}
	end, ok := addCheck(x.ViewOffs, nbytes)
	if x.ViewOffs < 0 || !ok || end > size {
		return fail(RuleGGMLViewBounds, ErrOutOfBounds, "bytes [%d, %d+%d) outside view_src %s of %d bytes",
			x.ViewOffs, x.ViewOffs, nbytes, quote(base.Name), size)
	}
	return nil
}

func viewSrcName(x *ggmlTensor) string {
	if x.ViewSrc == nil {
		return "nothing"
	}
	return quote(*x.ViewSrc)
}

// ggmlNbytes is ggml_nbytes: the bytes from a tensor's first element to one past its
// last, for ne >= 1 and nb >= 0; false on int64 overflow.
func ggmlNbytes(x *ggmlTensor, ty ggmlType) (int64, bool) {
	var n int64
	var ok bool
	if ty.blck == 1 {
		n = ty.size
	} else if n, ok = mulCheck(x.Ne[0]/ty.blck, x.Nb[0]); !ok {
		return 0, false
	}
	for k := range x.Ne {
		if k == 0 && ty.blck > 1 {
			continue
		}
		d, ok := mulCheck(x.Ne[k]-1, x.Nb[k])
		if !ok {
			return 0, false
		}
		if n, ok = addCheck(n, d); !ok {
			return 0, false
		}
	}
	return n, true
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
