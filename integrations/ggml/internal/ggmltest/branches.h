// A graph of independent branches, built in an order that keeps every
// branch's big temporary live at once: the case node reordering is for.

#ifndef SA_BRANCHES_H
#define SA_BRANCHES_H

#include <stdint.h>

#include "ggml.h"
#include "ggml-backend.h"

#include "fixture.h"

#define SA_BRANCHES_MAX 8

// sa_branches: x (input, E×T) feeds n branches, each
// r_i = down_i · gelu(up_i · x), a wide F×T temporary reduced to E×T; the
// output is their sum. The graph computes every up_i product, then every
// gelu, then every reduction, then the sum.
typedef struct sa_branches {
    int32_t n, E, F, T;
    sa_fixture fx;
    struct ggml_tensor * up[SA_BRANCHES_MAX], * down[SA_BRANCHES_MAX];
    // tensors of the graph of the last sa_branches_build
    struct ggml_tensor * inp, * out;
} sa_branches;

sa_branches * sa_branches_new(int32_t n, uint64_t seed);
void sa_branches_build(sa_branches * b);
void sa_branches_set_inputs(sa_branches * b, uint64_t seed);
void sa_branches_free(sa_branches * b);

#endif
