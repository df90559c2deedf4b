// Command preload is libsubarena-ggml.so, a shared library that replaces
// ggml's graph allocator (gallocr) in a llama.cpp process loaded with
// LD_PRELOAD. It is built by integrations/llamacpp/build.sh as
//
//	go build -buildmode=c-shared -tags subarena_extggml
//
// against the pinned llama.cpp release's headers; without that tag it is an
// empty program, so that go vet and go test of the module need no ggml.
//
// shim.c defines every function of ggml-alloc.h's gallocr API. Each buffer
// type of an allocator is planned by one of integrations/ggml's Allocators
// (subarena's planner, a plan cache per graph topology), which places the
// tensors whose node or leaf buffer ids are that buffer type's, the other
// buffers' tensors external to it. As under gallocr, a graph whose tensors
// fit a reserved plan is placed with it and nothing is planned after
// llama.cpp's reserve; for an allocator of one buffer type such a hit is
// served in C (ggml.Allocator.HitState), without calling into Go; anything it cannot serve — a graph it
// cannot read or place, a buffer over its buffer type's maximum size, a
// ggml other than the one it was built for — goes to ggml's own gallocr
// for that allocator, said once on stderr. The environment configures it:
//
//	SUBARENA_GGML=off          every call goes to ggml's gallocr
//	SUBARENA_GGML_LOG=1        one line on stderr per plan
//	SUBARENA_GGML_STATS=FILE   a JSON object written to FILE at exit
//	SUBARENA_GGML_BUDGET=DUR   time each reserve's plan may search below greedy when greedy
//	                           is above the lower bound (default 100ms; 0: greedy only)
//	SUBARENA_GGML_RELAYOUT=1   strided in-place placements (CPU buffers only)
//	SUBARENA_GGML_INPLACE=ggml in place by ggml's own rule only, without the
//	                           kernels verified beyond it (integrations/ggml/kernels)
//	SUBARENA_GGML_CHECK=1      every plan (the first plan and the planner's) run
//	                           through the safety checker (trace/check) before it
//	                           is used; an unsafe one is an error, and the
//	                           allocator falls back to gallocr (for tests)
//	SUBARENA_GGML_DUMP=DIR     each planned graph's trace written to DIR as
//	                           subarena-trace/v1 (for subarena plan, check, viz)
//	SUBARENA_GGML=gallocr      ggml's gallocr serves every allocator, counted
//	                           and timed as above: the baseline of the stats
//	SUBARENA_GGML_TEST_FALLBACK=reserve_n|alloc_graph
//	                           the first such call falls back (for tests)
//
// A C or C++ host only: a Go program links its own runtime and uses
// integrations/ggml directly.
package main

func main() {}
