// Decoder graphs built with ggml's own ops, for tests and benchmarks:
// LLaMA-style (RMS norm, fused QKV split by views, RoPE, fused gate/up split
// in halves, SiLU·up; or, split, llama.cpp's separate Q/K/V and gate/up
// matmuls joined by ggml_swiglu_split) and GPT-2-style (token and position embeddings by
// get_rows, layer norm with bias, fused QKV with bias, GELU MLP, tied LM
// head), with softmax or flash attention over a KV cache written by
// ggml_cpy into views of it. Weights are deterministic pseudo-random.

#ifndef SA_MODELS_H
#define SA_MODELS_H

#include <stdint.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

#include "fixture.h"

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
    int32_t last_only; // the last layer's FFN and the head see only each sequence's last token (get_rows)
    int32_t split;     // LLaMA: separate Q, K and V matmuls and gate and up matmuls joined by ggml_swiglu_split
                       // (GGML_OP_GLU), as llama.cpp builds LLaMA graphs; 0: fused QKV and gate/up split by views
    uint64_t seed;
} sa_hparams;

typedef struct sa_layer {
    struct ggml_tensor * attn_norm, * attn_norm_b, * wqkv, * bqkv, * wo, * bo;
    struct ggml_tensor * ffn_norm, * ffn_norm_b, * wup, * bup, * wdown, * bdown;
    struct ggml_tensor * wq, * wk, * wv, * wgate; // split: wqkv and wup's parts (wup is then up only)
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
    struct ggml_tensor * inp_embd, * inp_tokens, * inp_pos, * mask, * out_ids, * out;
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

// Micro graphs that make a kernel write into, or read from, a tensor the
// planner lays over the strided half of a fused product:
//   x = mul_mat(w1, inp)  [2F, T];  a, b = the halves of x (strided views)
//   y = writer(a[, b])    written in place over a's bytes while b lives on
//   z = reader(y[, b])    reads y with y's new strides
//   outputs: z (or mul_mat(w3, z)) and cont(b), which keeps b alive.
enum {
    SA_W_SILU = 0, SA_W_GELU, SA_W_MUL, SA_W_ADD, SA_W_RMS_NORM, SA_W_ROPE, SA_W_COUNT,
};
enum {
    SA_R_MUL_MAT = 0, SA_R_CPY, SA_R_CONT, SA_R_SILU, SA_R_GELU, SA_R_MUL, SA_R_ADD, SA_R_ROPE, SA_R_RMS_NORM,
    SA_R_NORM, SA_R_COUNT,
};

typedef struct sa_micro {
    int32_t writer, reader, E, F, D, T;
    sa_fixture fx;
    struct ggml_tensor * w1, * w2, * w3;
    // tensors of the graph of the last sa_micro_build
    struct ggml_tensor * inp, * pos, * out, * keep;
} sa_micro;

sa_micro * sa_micro_new(int32_t writer, int32_t reader, uint64_t seed);
void sa_micro_build(sa_micro * m);
void sa_micro_set_inputs(sa_micro * m, uint64_t seed);
void sa_micro_free(sa_micro * m);
