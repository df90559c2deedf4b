// Decoder graphs built with ggml's own ops, for tests and benchmarks:
// LLaMA-style (RMS norm, fused QKV split by views, RoPE, fused gate/up split
// in halves, SiLU·up) and GPT-2-style (token and position embeddings by
// get_rows, layer norm with bias, fused QKV with bias, GELU MLP, tied LM
// head), with softmax or flash attention over a KV cache written by
// ggml_cpy into views of it. Weights are deterministic pseudo-random.

#ifndef SA_MODELS_H
#define SA_MODELS_H

#include <stdint.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

enum { SA_ARCH_LLAMA = 0, SA_ARCH_GPT2 = 1 };

enum {
    SA_ATTN_MASK_INF = 0, // scale, diag_mask_inf, soft_max (ggml-tiny's graph)
    SA_ATTN_SOFT_MAX = 1, // soft_max_ext with a mask input and the scale
    SA_ATTN_FLASH    = 2, // flash_attn_ext with a mask input (V cache not transposed)
};

typedef struct sa_hparams {
    int32_t arch;
    int32_t n_embd, n_head, n_ff, n_layer;
    int32_t n_vocab;   // LLaMA: 0 = no LM head (output is the final norm)
    int32_t n_ctx;     // cache positions per sequence
    int32_t n_seq;     // sequences decoded together (ne[3] of the activations)
    int32_t attn;
    int32_t kv_pad;    // the attended cache length is rounded up to a multiple (0 = exact)
    int32_t wtype;     // ggml_type of the matrices (norms and biases are f32)
    int32_t alloc;     // 1: weights and caches in CPU buffers; 0: sizing only, no memory
    uint64_t seed;
} sa_hparams;

typedef struct sa_layer {
    struct ggml_tensor * attn_norm, * attn_norm_b, * wqkv, * bqkv, * wo, * bo;
    struct ggml_tensor * ffn_norm, * ffn_norm_b, * wup, * bup, * wdown, * bdown;
} sa_layer;

typedef struct sa_model {
    sa_hparams hp;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * tok_embd, * pos_embd, * out_norm, * out_norm_b;
    sa_layer * layers;
} sa_model;

typedef struct sa_cache {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor ** k, ** v;
    int32_t n_layer;
} sa_cache;

typedef struct sa_graph {
    struct ggml_context * ctx;
    struct ggml_cgraph * gf;
    struct ggml_tensor * inp_embd, * inp_tokens, * inp_pos, * mask, * out;
    int32_t n_tokens, n_past, n_kv;
} sa_graph;

sa_model * sa_model_new(const sa_hparams * hp);
void sa_model_free(sa_model * m);
sa_cache * sa_cache_new(const sa_model * m);
void sa_cache_free(sa_cache * c);

// sa_graph_new builds the graph of one step: n_tokens new tokens per
// sequence after n_past cached ones. The graph's context holds no data.
sa_graph * sa_graph_new(const sa_model * m, const sa_cache * c, int32_t n_tokens, int32_t n_past);
void sa_graph_free(sa_graph * g);

// sa_graph_set_inputs writes the step's inputs (allocated tensors) from seed.
void sa_graph_set_inputs(const sa_model * m, sa_graph * g, uint64_t seed);

// sa_graph_clear undoes an allocation into compute: the graph's tensors
// are as sa_graph_new built them (views of the caches keep their data).
void sa_graph_clear(sa_graph * g, ggml_backend_buffer_t compute);

// Allocation without subarena.
ggml_gallocr_t sa_gallocr_new(void);
// sa_alloc_own gives every tensor of the graph's context its own bytes.
ggml_backend_buffer_t sa_alloc_own(sa_graph * g);

#endif
