// Package kernels is the table of ggml CPU kernels verified to compute
// bit-identically when their output overlays one of their inputs, beyond
// the ops ggml's own graph allocator runs in place (ggml_op_can_inplace).
//
// integrations/ggml's in-place rule (inplace.go) reads it: on ggml's CPU
// buffer type, with the ggml version the kernels were verified on
// (GGMLVersion), an op runs in place when ggml's rule or an entry of
// InPlace allows it; on any other buffer type or version, only ggml's rule
// does. Nothing outside the two runs in place.
//
// Every entry is backed by a check that runs the kernel, through the
// pinned llama.cpp release's CPU backend, with its output over each input
// it may overlay and with separate memory, for each of the entry's types,
// on 1 and several threads, and compares the outputs byte for byte:
// integrations/llamacpp/driver/kernel-check.c, run for every entry by
// integrations/llamacpp's TestInplaceKernels. An entry that kernel-check
// has no check for fails that test.
//
// The package has no cgo and no ggml: it names ops, variants and types as
// ggml names them (ggml_op_name, ggml_glu_op_name, ggml_type_name), and
// the rule resolves the names against the linked ggml.
package kernels

// GGMLVersion is the ggml version (ggml_version()) whose CPU kernels the
// entries were read in and checked against: node-llama-cpp 3.21.1's
// llama.cpp release.
const GGMLVersion = "0.23.0"

// Layout says which inputs an entry's output may overlay, and on what
// layouts. In every layout the output overlays an input element i over
// element i (same type, ne and strides), as the planner pairs them.
type Layout int

const (
	// TwoSources: the op has exactly two sources, both of the output's
	// type and ne, and the output and both sources are contiguous; the
	// output may overlay either source.
	TwoSources Layout = iota + 1
	// OneSource: the op has one source, of the output's type and ne, and
	// both are contiguous; the output may overlay it.
	OneSource
)

// String names l in tables and messages.
func (l Layout) String() string {
	switch l {
	case TwoSources:
		return "two sources of the output's type and ne, all contiguous"
	case OneSource:
		return "one source of the output's type and ne, both contiguous"
	}
	return "unknown layout"
}

// Entry is one verified (op, kernel variant, types, layout) entry.
type Entry struct {
	// Op is the op's ggml_op_name ("GLU").
	Op string
	// Variant is the kernel variant: for GLU the ggml_glu_op_name
	// ("SWIGLU"); "" for an op without variants.
	Variant string
	// Types are the ggml_type_name of the output (and of the sources it
	// may overlay) for which the kernel was verified.
	Types []string
	// Layout is the layouts the entry covers.
	Layout Layout
	// Why says, from the kernel's source, why it is safe.
	Why string
}

// glu is what every two-source GLU kernel of ggml-cpu/ops.cpp does: rows
// split between threads the same way for the output and both sources
// (i1 over ggml_nrows), each output row computed by a vec function that
// reads element k of the gate row and of the up row and then writes
// element k of the output row (SIMD lanes load before they store the same
// lanes). The swapped flag (op_params[1]) is read only with one source.
const glu = "elementwise per row: y[k] = f(x[k], g[k]), each element read before it is written; rows split alike for every tensor"

// InPlace lists the verified entries, for the CPU backend of GGMLVersion.
//
// Read in the same kernels and left out: GET_ROWS (a gather: output row i
// reads source row ids[i], which another row, or another thread, may
// already have overwritten), CPY and CONT between equal layouts (a memcpy
// onto itself, undefined in C), MUL_MAT and FLASH_ATTN_EXT (each output
// element reads whole rows and columns). ggml's own list already holds the
// element-wise binary ops (ADD, SUB, MUL, DIV: a broadcast source has fewer
// elements than the output and is never paired with it), UNARY, SCALE,
// SOFT_MAX, RMS_NORM and ROPE.
var InPlace = []Entry{
	{Op: "GLU", Variant: "REGLU", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu},
	{Op: "GLU", Variant: "GEGLU", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu},
	{Op: "GLU", Variant: "SWIGLU", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu},
	{Op: "GLU", Variant: "SWIGLU_OAI", Types: []string{"f32"}, Layout: TwoSources, Why: glu + " (alpha and limit from op_params; f32 only)"},
	{Op: "GLU", Variant: "GEGLU_ERF", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu},
	{Op: "GLU", Variant: "GEGLU_QUICK", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu},
	{Op: "GLU", Variant: "SWIGLU_CLAMP", Types: []string{"f32", "f16"}, Layout: TwoSources, Why: glu + " (limit from op_params)"},
	{Op: "NORM", Types: []string{"f32"}, Layout: OneSource, Why: "LayerNorm without weights, row by row (rows dealt to threads by index, alike for output and source): " +
		"the row's sum first (reads only), then y[k] = x[k] - mean (ggml_vec_cvar_f32: element k read, then written), then y scaled in place; f32 only"},
}
