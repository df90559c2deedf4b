package ggmltrace

// ggmlInPlaceOps are the ops ggml_op_can_inplace lists in ggml 0.23.0, the
// version of the pinned llama.cpp release (integrations/ggml tests that
// the release's ggml lists exactly these).
var ggmlInPlaceOps = map[string]bool{
	"ADD": true, "ADD_ID": true, "ADD1": true, "SUB": true, "MUL": true, "DIV": true,
	"SQR": true, "SQRT": true, "LOG": true, "SILU_BACK": true, "RMS_NORM": true,
	"RMS_NORM_BACK": true, "SCALE": true, "DIAG_MASK_INF": true, "DIAG_MASK_ZERO": true,
	"SOFT_MAX": true, "SOFT_MAX_BACK": true, "ROPE": true, "ROPE_BACK": true, "CLAMP": true,
	"FILL": true, "UNARY": true,
}

// InPlaceOp reports whether ggml_op_can_inplace lists op (by the name
// ggml_op_name gives it): the first half of ggml's in-place rule.
func InPlaceOp(op string) bool { return ggmlInPlaceOps[op] }

// InPlaceOps returns the ops InPlaceOp accepts, in no order.
func InPlaceOps() []string {
	out := make([]string, 0, len(ggmlInPlaceOps))
	for op := range ggmlInPlaceOps {
		out = append(out, op)
	}
	return out
}

// Operand is a tensor as ggml's in-place rule sees it.
type Operand struct {
	Type     string   // the name ggml_type_name gives its type
	TypeSize int64    // ggml_type_size: bytes per block of Type
	Ne       [4]int64 // elements per dimension, innermost first
	Own      bool     // the graph allocator places its bytes (its base is no weight, cache or other buffer's)
}

// CanInplace is ggml's in-place rule, the one rule both the importer and
// integrations/ggml's live graph reader map ggml graphs with: a node that
// runs op, writes out and reads srcs may write its output over a dying
// input when ggml_op_can_inplace lists op (InPlaceOp) and every source the
// planner could pair with the output — one the allocator places, of as
// many elements of as many bytes per block — has the output's type and ne,
// as ggml-alloc asks (ggml_are_same_layout). A source that fails the
// second test makes the whole node run out of place: the planner pairs by
// size, and ggml would not reuse that source.
func CanInplace(op string, out Operand, srcs []Operand) bool {
	return ggmlInPlaceOps[op] && SameLayoutSources(out, srcs)
}

// SameLayoutSources is the second half of CanInplace, for a caller that
// has asked InPlaceOp already: every source the planner could pair with
// out (one the allocator places, of as many elements of as many bytes per
// block) has out's type and ne.
func SameLayoutSources(out Operand, srcs []Operand) bool {
	n := elements(&out.Ne)
	for i := range srcs {
		s := &srcs[i]
		if !s.Own || s.TypeSize != out.TypeSize || elements(&s.Ne) != n {
			continue
		}
		if s.Type != out.Type || s.Ne != out.Ne {
			return false
		}
	}
	return true
}

func elements(ne *[4]int64) int64 { return ne[0] * ne[1] * ne[2] * ne[3] }

// operand is tensor i of the document as CanInplace sees it.
func (im *ggmlImporter) operand(i int) Operand {
	x := &im.g.Tensors[i]
	o := Operand{Type: x.Type, TypeSize: ggmlTypes[x.Type].size, Ne: [4]int64{1, 1, 1, 1},
		Own: im.kind[im.base[i]] == ggmlAlloc}
	copy(o.Ne[:], x.Ne)
	return o
}

// canInplace applies CanInplace to node i of the document.
func (im *ggmlImporter) canInplace(i int) bool {
	x := &im.g.Tensors[i]
	if !ggmlInPlaceOps[x.Op] {
		return false
	}
	var buf [10]Operand // GGML_MAX_SRC
	srcs := buf[:0]
	for _, s := range x.Src {
		if s != nil {
			srcs = append(srcs, im.operand(im.byName[*s]))
		}
	}
	return SameLayoutSources(im.operand(i), srcs)
}
