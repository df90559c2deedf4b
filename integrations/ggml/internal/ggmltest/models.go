// Package ggmltest builds decoder graphs with ggml's own ops and runs them
// under ggml's allocators, for the tests, benchmarks and ggmlbench.
//
// A Model is built from Params: LLaMA-style (fused QKV and gate/up, or
// llama.cpp's separate matmuls with Split) or GPT-2-style, with weights of type
// F32, F16 or Q8_0, at the shapes Shapes lists (LLaMA7B and GPT2Small for
// the big ones). A Micro graph is one writer op (WSiLU, WGELU, WMul, WAdd,
// WRMSNorm, WRope) feeding one reader op (RMulMat, RCpy, RCont, RSiLU,
// RGELU, RMul, RAdd, RRope, RRMSNorm, RNorm) through a view, for the
// relayout tests.
package ggmltest

/*
#cgo CPPFLAGS: -I${SRCDIR}/../../.release/llama.cpp/ggml/include
#cgo CFLAGS: -O2
#cgo LDFLAGS: -L${SRCDIR}/../../.release/bins -lggml-base -lm -Wl,-rpath,${SRCDIR}/../../.release/bins
#include <stdlib.h>
#include "models.h"

static size_t sa_gallocr_size_only(struct ggml_cgraph * gf) {
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    size_t size = 0;
    ggml_gallocr_reserve_n_size(ga, gf, NULL, NULL, &size);
    ggml_gallocr_free(ga);
    return size;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/subarena/subarena/integrations/ggml/internal/cpubackend"
)

// Arch is a decoder architecture.
type Arch int

// The architectures.
const (
	LLaMA Arch = C.SA_ARCH_LLAMA
	GPT2  Arch = C.SA_ARCH_GPT2
)

func (a Arch) String() string {
	if a == GPT2 {
		return "gpt2"
	}
	return "llama"
}

// Attn is how attention is computed.
type Attn int

// The attention variants.
const (
	// AttnMaskInf: scale, diag_mask_inf, soft_max (ggml-tiny's graph).
	AttnMaskInf Attn = C.SA_ATTN_MASK_INF
	// AttnSoftMax: soft_max_ext with a mask input.
	AttnSoftMax Attn = C.SA_ATTN_SOFT_MAX
	// AttnFlash: flash_attn_ext with a mask input.
	AttnFlash Attn = C.SA_ATTN_FLASH
)

func (a Attn) String() string {
	switch a {
	case AttnSoftMax:
		return "softmax"
	case AttnFlash:
		return "flash"
	}
	return "maskinf"
}

// ggml types for Params.WType.
const (
	F32  = C.GGML_TYPE_F32
	F16  = C.GGML_TYPE_F16
	Q8_0 = C.GGML_TYPE_Q8_0
)

// Params shapes a model.
type Params struct {
	Arch   Arch
	Embd   int // width
	Heads  int
	FF     int // feed-forward width
	Layers int
	Vocab  int // LM head rows (LLaMA: 0 = none, the output is the final norm)
	Ctx    int // cache positions per sequence
	Seqs   int // sequences per step (batch)
	Attn   Attn
	KVPad  int // attended cache length rounded up to a multiple (0 = exact)
	WType  int // ggml type of the matrices (default F16)
	// Split (LLaMA) builds llama.cpp's LLaMA graph: separate Q, K and V
	// matmuls, and separate gate and up matmuls joined by ggml_swiglu_split
	// (GGML_OP_GLU), instead of one fused QKV matmul and one fused gate/up
	// matmul split by views.
	Split bool
	// LastOnly passes only each sequence's last token through the last
	// layer's FFN and the head (get_rows on output ids), as llama.cpp does
	// when only the last logits are wanted.
	LastOnly bool
	// SizeOnly builds weights and caches with no memory: graphs can be
	// planned and sized but not computed.
	SizeOnly bool
	Seed     uint64
}

// Tiny is ggml-tiny's shape (testdata/ggml/ggml-tiny.json): 2 LLaMA-style
// layers of width 256, 4 heads, n_ff 688; its graph is a 32-token prefill.
func Tiny() Params {
	return Params{Arch: LLaMA, Embd: 256, Heads: 4, FF: 688, Layers: 2, Ctx: 32, Seqs: 1, Attn: AttnMaskInf, Seed: 1}
}

func (p Params) String() string {
	last := ""
	if p.LastOnly {
		last = "-last"
	}
	if p.Split {
		last += "-split"
	}
	return fmt.Sprintf("%s-e%d-h%d-f%d-l%d-b%d-%s%s", p.Arch, p.Embd, p.Heads, p.FF, p.Layers, p.Seqs, p.Attn, last)
}

// Model is a model's weights (no_alloc context, CPU buffer unless SizeOnly).
type Model struct {
	Params
	m *C.sa_model
}

// NewModel makes the weights of p.
func NewModel(p Params) *Model {
	if p.Seqs == 0 {
		p.Seqs = 1
	}
	if p.WType == 0 {
		p.WType = F16
	}
	hp := C.sa_hparams{arch: C.int32_t(p.Arch), n_embd: C.int32_t(p.Embd), n_head: C.int32_t(p.Heads),
		n_ff: C.int32_t(p.FF), n_layer: C.int32_t(p.Layers), n_vocab: C.int32_t(p.Vocab), n_ctx: C.int32_t(p.Ctx),
		n_seq: C.int32_t(p.Seqs), attn: C.int32_t(p.Attn), kv_pad: C.int32_t(p.KVPad), wtype: C.int32_t(p.WType),
		seed: C.uint64_t(p.Seed)}
	if !p.SizeOnly {
		hp.alloc = 1
	}
	if p.LastOnly {
		hp.last_only = 1
	}
	if p.Split && p.Arch == LLaMA {
		hp.split = 1
	}
	return &Model{Params: p, m: C.sa_model_new(&hp)}
}

// Free releases the weights.
func (m *Model) Free() { C.sa_model_free(m.m) }

// Cache is a KV cache: per layer a K and a V tensor in their own buffer.
type Cache struct {
	c *C.sa_cache
}

// NewCache makes a zeroed cache for m.
func (m *Model) NewCache() *Cache { return &Cache{c: C.sa_cache_new(m.m)} }

// Free releases the cache.
func (c *Cache) Free() { C.sa_cache_free(c.c) }

// Bytes returns the cache's contents, layer by layer, K then V.
func (c *Cache) Bytes() []byte {
	var out []byte
	n := int(c.c.n_layer)
	ks := unsafe.Slice(c.c.k, n)
	vs := unsafe.Slice(c.c.v, n)
	for i := range n {
		out = append(out, tensorBytes(ks[i])...)
		out = append(out, tensorBytes(vs[i])...)
	}
	return out
}

func tensorBytes(t *C.struct_ggml_tensor) []byte {
	n := C.ggml_nbytes(t)
	b := make([]byte, int(n))
	if n > 0 {
		C.ggml_backend_tensor_get(t, unsafe.Pointer(&b[0]), 0, n)
	}
	return b
}

// Graph is one step's graph, in its own no_alloc context.
type Graph struct {
	g *C.sa_graph
	// Tokens, Past and KV are the step's new tokens, cached tokens and
	// attended cache length.
	Tokens, Past, KV int
}

// Build builds the graph of a step of tokens new tokens per sequence after
// past cached ones.
func (m *Model) Build(c *Cache, tokens, past int) *Graph {
	g := C.sa_graph_new(m.m, c.c, C.int32_t(tokens), C.int32_t(past))
	return &Graph{g: g, Tokens: tokens, Past: past, KV: int(g.n_kv)}
}

// CGraph returns the struct ggml_cgraph *.
func (g *Graph) CGraph() unsafe.Pointer { return unsafe.Pointer(g.g.gf) }

// Nodes returns the number of nodes.
func (g *Graph) Nodes() int { return int(C.ggml_graph_n_nodes(g.g.gf)) }

// Free releases the graph's context (not the memory its tensors point to).
func (g *Graph) Free() { C.sa_graph_free(g.g) }

// SetInputs writes the step's inputs (after allocation) from seed.
func (g *Graph) SetInputs(m *Model, seed uint64) { C.sa_graph_set_inputs(m.m, g.g, C.uint64_t(seed)) }

// Output returns the output tensor's bytes (after compute).
func (g *Graph) Output() []byte { return tensorBytes(g.g.out) }

// AllocOwn gives every tensor of the graph its own bytes in one buffer
// (ggml_backend_alloc_ctx_tensors: nothing is reused); free releases it.
func (g *Graph) AllocOwn() (free func(), err error) {
	buf := C.sa_alloc_own(g.g)
	if buf == nil {
		return nil, fmt.Errorf("ggml_backend_alloc_ctx_tensors failed")
	}
	return func() { C.ggml_backend_buffer_free(buf) }, nil
}

// GallocrSize is the buffer ggml_gallocr would reserve for the graph
// (ggml_gallocr_reserve_n_size: no memory is allocated).
func (g *Graph) GallocrSize() int64 { return gallocrSize(g.g.gf) }

// gallocrSize returns the buffer a new ggml_gallocr on the CPU buffer type
// reserves for gf, without allocating it.
func gallocrSize(gf *C.struct_ggml_cgraph) int64 { return int64(C.sa_gallocr_size_only(gf)) }

// Backend is ggml's CPU backend, the release's best variant for this
// machine.
type Backend struct {
	cpu *cpubackend.Backend
	b   C.ggml_backend_t
}

// NewBackend starts a CPU backend with threads threads. It panics when
// the release has no CPU backend for this machine: no test can run then.
func NewBackend(threads int) *Backend {
	cpu, err := cpubackend.New(threads, false)
	if err != nil {
		panic(err)
	}
	return &Backend{cpu: cpu, b: (C.ggml_backend_t)(cpu.Handle())}
}

// Free stops the backend.
func (b *Backend) Free() { b.cpu.Free() }

// Compute runs an allocated graph.
func (b *Backend) Compute(g *Graph) error {
	if st := C.ggml_backend_graph_compute(b.b, g.g.gf); st != C.GGML_STATUS_SUCCESS {
		return fmt.Errorf("ggml_backend_graph_compute: status %d", int(st))
	}
	return nil
}

// Gallocr is ggml's graph allocator on the CPU buffer type.
type Gallocr struct {
	a C.ggml_gallocr_t
}

// NewGallocr returns ggml_gallocr_new(ggml_backend_cpu_buffer_type()).
func NewGallocr() *Gallocr { return &Gallocr{a: C.sa_gallocr_new()} }

// Free releases it and its buffer.
func (a *Gallocr) Free() { C.ggml_gallocr_free(a.a) }

// Reserve is ggml_gallocr_reserve.
func (a *Gallocr) Reserve(g *Graph) error {
	if !C.ggml_gallocr_reserve(a.a, g.g.gf) {
		return fmt.Errorf("ggml_gallocr_reserve failed")
	}
	return nil
}

// Alloc is ggml_gallocr_alloc_graph.
func (a *Gallocr) Alloc(g *Graph) error {
	if !C.ggml_gallocr_alloc_graph(a.a, g.g.gf) {
		return fmt.Errorf("ggml_gallocr_alloc_graph failed")
	}
	return nil
}

// ReserveCGraph and AllocCGraph are Reserve and Alloc on a struct ggml_cgraph *.
func (a *Gallocr) ReserveCGraph(gf unsafe.Pointer) bool {
	return bool(C.ggml_gallocr_reserve(a.a, (*C.struct_ggml_cgraph)(gf)))
}

// AllocCGraph is ggml_gallocr_alloc_graph on a struct ggml_cgraph *.
func (a *Gallocr) AllocCGraph(gf unsafe.Pointer) bool {
	return bool(C.ggml_gallocr_alloc_graph(a.a, (*C.struct_ggml_cgraph)(gf)))
}

// Size is ggml_gallocr_get_buffer_size(galloc, 0).
func (a *Gallocr) Size() int64 { return int64(C.ggml_gallocr_get_buffer_size(a.a, 0)) }

// Clear undoes an allocation into the buffer compute (a
// ggml_backend_buffer_t): the graph is as Build made it, so that an
// allocator can place it again as it would a fresh graph. Strides an
// allocator changed stay changed. Clear(nil) walks the tensors and changes
// nothing: the cost of Clear, for a loop that places a graph with a subarena
// Allocator, which places every tensor in its own buffer afresh anyway.
func (g *Graph) Clear(compute unsafe.Pointer) {
	C.sa_graph_clear(g.g, C.ggml_backend_buffer_t(compute))
}

// OutputBuffer returns the ggml_backend_buffer_t the graph's output was
// placed in: the compute buffer of the allocator that placed the graph
// (ggml-alloc keeps its own in a private struct).
func (g *Graph) OutputBuffer() unsafe.Pointer { return unsafe.Pointer(g.g.out.buffer) }

// Writers and readers of the micro graphs (see models.h).
const (
	WSiLU    = C.SA_W_SILU
	WGELU    = C.SA_W_GELU
	WMul     = C.SA_W_MUL
	WAdd     = C.SA_W_ADD
	WRMSNorm = C.SA_W_RMS_NORM
	WRope    = C.SA_W_ROPE
	WCount   = C.SA_W_COUNT

	RMulMat  = C.SA_R_MUL_MAT
	RCpy     = C.SA_R_CPY
	RCont    = C.SA_R_CONT
	RSiLU    = C.SA_R_SILU
	RGELU    = C.SA_R_GELU
	RMul     = C.SA_R_MUL
	RAdd     = C.SA_R_ADD
	RRope    = C.SA_R_ROPE
	RRMSNorm = C.SA_R_RMS_NORM
	RNorm    = C.SA_R_NORM
	RCount   = C.SA_R_COUNT
)

// WriterNames and ReaderNames name them.
var (
	WriterNames = []string{"silu", "gelu", "mul", "add", "rms_norm", "rope"}
	ReaderNames = []string{"mul_mat", "cpy", "cont", "silu", "gelu", "mul", "add", "rope", "rms_norm", "norm"}
)

// Micro is a micro graph's weights; Build makes its graph.
type Micro struct {
	m *C.sa_micro
}

// NewMicro makes the weights of a micro graph with the given writer and
// reader of the relaid tensor y.
func NewMicro(writer, reader int, seed uint64) *Micro {
	return &Micro{m: C.sa_micro_new(C.int32_t(writer), C.int32_t(reader), C.uint64_t(seed))}
}

// Build builds a fresh graph (freeing the previous one).
func (m *Micro) Build() {
	C.sa_fixture_free_graph(&m.m.fx)
	C.sa_micro_build(m.m)
}

// CGraph returns the graph of the last Build.
func (m *Micro) CGraph() unsafe.Pointer { return unsafe.Pointer(m.m.fx.gf) }

// SetInputs writes the inputs after allocation.
func (m *Micro) SetInputs(seed uint64) { C.sa_micro_set_inputs(m.m, C.uint64_t(seed)) }

// Outputs returns the bytes of the two outputs after compute.
func (m *Micro) Outputs() []byte {
	return append(tensorBytes(m.m.out), tensorBytes(m.m.keep)...)
}

// AllocOwn gives every tensor of the graph its own bytes.
func (m *Micro) AllocOwn() (free func(), err error) { return allocOwn(&m.m.fx) }

// allocOwn gives every tensor of the fixture's graph its own bytes, in one
// CPU buffer that free releases.
func allocOwn(fx *C.sa_fixture) (free func(), err error) {
	buf := C.ggml_backend_alloc_ctx_tensors_from_buft(fx.ctx, C.ggml_backend_cpu_buffer_type())
	if buf == nil {
		return nil, fmt.Errorf("ggml_backend_alloc_ctx_tensors failed")
	}
	return func() { C.ggml_backend_buffer_free(buf) }, nil
}

// ComputeCGraph runs an allocated graph on the backend.
func (b *Backend) ComputeCGraph(gf unsafe.Pointer) error {
	if st := C.ggml_backend_graph_compute(b.b, (*C.struct_ggml_cgraph)(gf)); st != C.GGML_STATUS_SUCCESS {
		return fmt.Errorf("ggml_backend_graph_compute: status %d", int(st))
	}
	return nil
}

// Free releases the weights and the graph.
func (m *Micro) Free() { C.sa_micro_free(m.m) }
