#include "fixture.h"

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
