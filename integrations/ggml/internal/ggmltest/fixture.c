#include "fixture.h"

#include <stdlib.h>

uint64_t sa_splitmix(uint64_t * s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float sa_unif(uint64_t * s) {
    return (float) ((double) (sa_splitmix(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

void sa_fill(struct ggml_tensor * t, uint64_t seed, float base, float scale) {
    int64_t n = ggml_nelements(t);
    float * f = (float *) malloc((size_t) n * sizeof(float));
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        f[i] = base + scale * sa_unif(&s);
    }
    if (t->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(t, f, 0, (size_t) n * sizeof(float));
    } else if (t->type == GGML_TYPE_F16) {
        ggml_fp16_t * h = (ggml_fp16_t *) malloc((size_t) n * sizeof(ggml_fp16_t));
        ggml_fp32_to_fp16_row(f, h, n);
        ggml_backend_tensor_set(t, h, 0, (size_t) n * sizeof(ggml_fp16_t));
        free(h);
    } else {
        // quantized: rows of ne[0] elements
        size_t row = ggml_row_size(t->type, t->ne[0]);
        int64_t nrows = n / t->ne[0];
        void * q = malloc(row * (size_t) nrows);
        ggml_quantize_chunk(t->type, f, q, 0, nrows, t->ne[0], NULL);
        ggml_backend_tensor_set(t, q, 0, row * (size_t) nrows);
        free(q);
    }
    free(f);
}

void sa_free_tensors(struct ggml_context * ctx, ggml_backend_buffer_t buf) {
    if (buf != NULL) {
        ggml_backend_buffer_free(buf);
    }
    ggml_free(ctx);
}

struct ggml_context * sa_fixture_new_graph(sa_fixture * fx, size_t size) {
    struct ggml_init_params ip = { ggml_tensor_overhead() * size + ggml_graph_overhead_custom(size, false), NULL, true };
    fx->ctx = ggml_init(ip);
    fx->gf = ggml_new_graph_custom(fx->ctx, size, false);
    return fx->ctx;
}

void sa_fixture_free_graph(sa_fixture * fx) {
    if (fx->ctx != NULL) {
        ggml_free(fx->ctx);
        fx->ctx = NULL;
        fx->gf = NULL;
    }
}

void sa_fixture_free(sa_fixture * fx) {
    sa_fixture_free_graph(fx);
    sa_free_tensors(fx->ctx_w, fx->buf_w);
}
