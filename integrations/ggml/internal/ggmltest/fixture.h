// A fixture: weights in a context and CPU buffer of their own, and the
// graph of the last build in a no_alloc context of its own.

#ifndef SA_FIXTURE_H
#define SA_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"

typedef struct sa_fixture {
    struct ggml_context * ctx_w;
    ggml_backend_buffer_t buf_w;
    // the graph of the last build
    struct ggml_context * ctx;
    struct ggml_cgraph * gf;
} sa_fixture;

// sa_splitmix returns the next number of the splitmix64 sequence whose
// state is *s.
uint64_t sa_splitmix(uint64_t * s);

// sa_unif returns a number uniform in [-1, 1) drawn from *s.
float sa_unif(uint64_t * s);

// sa_fill sets every element of t, an F32, F16 or quantized tensor with
// data, to base + scale * sa_unif of a sequence seeded with seed.
void sa_fill(struct ggml_tensor * t, uint64_t seed, float base, float scale);

// sa_free_tensors frees a context and buf, the buffer its tensors were
// allocated in (NULL for none).
void sa_free_tensors(struct ggml_context * ctx, ggml_backend_buffer_t buf);

// sa_fixture_new_graph starts a graph of at most size nodes, in a no_alloc
// context for size tensors, and returns the context.
struct ggml_context * sa_fixture_new_graph(sa_fixture * fx, size_t size);

// sa_fixture_free_graph frees the graph of the last build, if any.
void sa_fixture_free_graph(sa_fixture * fx);

// sa_fixture_free frees the graph and the weights (not fx itself).
void sa_fixture_free(sa_fixture * fx);

#endif
