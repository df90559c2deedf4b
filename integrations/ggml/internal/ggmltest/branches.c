#include "branches.h"

#include <math.h>
#include <stdlib.h>

sa_branches * sa_branches_new(int32_t n, uint64_t seed) {
    if (n < 1 || n > SA_BRANCHES_MAX) {
        return NULL;
    }
    sa_branches * b = (sa_branches *) calloc(1, sizeof(sa_branches));
    b->n = n;
    b->E = 64;
    b->F = 512;
    b->T = 16;
    struct ggml_init_params ip = { ggml_tensor_overhead() * 2 * SA_BRANCHES_MAX, NULL, true };
    b->fx.ctx_w = ggml_init(ip);
    for (int i = 0; i < n; i++) {
        b->up[i] = ggml_new_tensor_2d(b->fx.ctx_w, GGML_TYPE_F32, b->E, b->F);
        ggml_format_name(b->up[i], "up-%d", i);
        b->down[i] = ggml_new_tensor_2d(b->fx.ctx_w, GGML_TYPE_F32, b->F, b->E);
        ggml_format_name(b->down[i], "down-%d", i);
    }
    b->fx.buf_w = ggml_backend_alloc_ctx_tensors_from_buft(b->fx.ctx_w, ggml_backend_cpu_buffer_type());
    for (int i = 0; i < n; i++) {
        sa_fill(b->up[i], seed ^ (uint64_t) (2 * i + 1), 0.0f, 1.0f / sqrtf((float) b->E));
        sa_fill(b->down[i], seed ^ (uint64_t) (2 * i + 2), 0.0f, 1.0f / sqrtf((float) b->F));
    }
    return b;
}

void sa_branches_build(sa_branches * b) {
    struct ggml_context * ctx = sa_fixture_new_graph(&b->fx, 64);
    b->inp = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, b->E, b->T);
    ggml_set_name(b->inp, "x");
    ggml_set_input(b->inp);
    struct ggml_tensor * h[SA_BRANCHES_MAX], * a[SA_BRANCHES_MAX], * r[SA_BRANCHES_MAX];
    for (int i = 0; i < b->n; i++) {
        h[i] = ggml_mul_mat(ctx, b->up[i], b->inp);
        ggml_format_name(h[i], "h-%d", i);
        ggml_build_forward_expand(b->fx.gf, h[i]);
    }
    for (int i = 0; i < b->n; i++) {
        a[i] = ggml_gelu(ctx, h[i]);
        ggml_format_name(a[i], "a-%d", i);
        ggml_build_forward_expand(b->fx.gf, a[i]);
    }
    for (int i = 0; i < b->n; i++) {
        r[i] = ggml_mul_mat(ctx, b->down[i], a[i]);
        ggml_format_name(r[i], "r-%d", i);
        ggml_build_forward_expand(b->fx.gf, r[i]);
    }
    struct ggml_tensor * out = r[0];
    for (int i = 1; i < b->n; i++) {
        out = ggml_add(ctx, out, r[i]);
        ggml_format_name(out, "sum-%d", i);
    }
    ggml_set_output(out);
    b->out = out;
    ggml_build_forward_expand(b->fx.gf, out);
}

void sa_branches_set_inputs(sa_branches * b, uint64_t seed) {
    sa_fill(b->inp, seed, 0.0f, 1.0f);
}

void sa_branches_free(sa_branches * b) {
    if (b == NULL) {
        return;
    }
    sa_fixture_free(&b->fx);
    free(b);
}
