// Package ggmltrace imports the traces ggml's graph allocator writes (ggml-alloc-trace/1:
// one document per compute graph, listing its tensors in ggml-alloc's walk order) as
// subarena-trace/v1 traces (package trace).
//
// # What a trace becomes
//
// Import turns a document into a trace of one engine (Engine) following ggml-alloc's
// walk: the granule is the document's alignment; ne/nb (innermost first) become shape and
// strides reversed, quantized types counted in blocks; tensors of the weights and
// kv_cache buffers become externals; compute leafs and inputs are allocated before the
// first op; VIEW, RESHAPE, PERMUTE and TRANSPOSE tensors become views of their view_src;
// every other node is an op reading its sources and writing its own tensor, in place
// where ggml's rule allows it; a compute buffer is released right after its last user
// unless it (or a view of it) is an output. docs/TRACE.md's "ggml-alloc-trace/1" section
// is the normative description; Import's doc lists the mapping in full.
//
// # The in-place rule
//
// CanInplace is ggml's in-place rule, the one rule both Import and integrations/ggml's
// live graph reader map graphs with: ggml_op_can_inplace lists the op (InPlaceOp, the
// list of the pinned ggml 0.23.0, which integrations/ggml checks op by op against the
// ggml it links), and every source the planner could pair with the output has the
// output's type and ne (SameLayoutSources, for a caller that has asked InPlaceOp
// already).
//
// # Invariants
//
// Every tensor is validated against ggml's rules before anything is imported (a known
// type, 1 to 4 dimensions, consistent ne/nb/nbytes/alloc_size, a view inside its base):
// a tensor that breaks one is reported as a *TensorError naming the tensor and the rule
// (RuleType, RuleDims, RuleNe, RuleBlock, RuleNb, RuleNbytes, RuleAllocSize, RuleViewSrc
// or RuleViewBounds), matching one of package trace's sentinels through
// errors.Is. JSON errors say their line and column and match trace.ErrSyntax; a document
// of another format or version matches trace.ErrFormat and trace.ErrUnknownFormat. The
// trace Import returns is validated and normalized as trace.Parse's are; ImportProgram
// returns its resolved Program at no extra cost. No input panics.
//
// # Use
//
// Most callers do not call Import directly: package trace/tracefile's Read and Load tell
// a ggml trace by its "format" key and import it. Call Import when the bytes are known to
// be a ggml trace, e.g. a document the integrations/ggml module wrote.
package ggmltrace
