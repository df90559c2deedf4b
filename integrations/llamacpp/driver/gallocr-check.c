// gallocr-check: drives ggml's gallocr API directly, for what llama.cpp's
// CPU path does not reach, and prints one line per check ("ok NAME" or
// "FAIL NAME: why"); the exit status is the number of failures.
//
//   gallocr-check BACKENDS_DIR
//
// Checks, on a small graph with an input, views, in-place candidates and an
// output: reserve_n_size reports what reserve_n then allocates; a graph
// allocated and computed gives the outputs that ggml's own gallocr gives
// (called through the library's dlopen'd handle: a foreign handle); an
// allocator of one buffer type under two buffer ids, and one of two buffer
// types (the CPU's and a copy of it, a distinct buffer type that allocates
// CPU memory), compute the same, tensors placed in the buffer of their id.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h" // struct ggml_backend_buffer_type, to make a second CPU buffer type
#include "ggml-backend.h"
#include "ggml-impl.h" // struct ggml_cgraph, for its leaves
#include "ggml.h"

bool ggml_op_can_inplace(enum ggml_op op); // exported by ggml without a prototype

static int failures;

static void check(int ok, const char * name, const char * why) {
    if (ok) {
        printf("ok %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, why);
        failures++;
    }
}

struct graph {
    struct ggml_context * ctx;
    struct ggml_cgraph * g;
    struct ggml_tensor * in, * unread, * out;
};

// build makes out = sum over a chain of ops on in (n x n): matmul with a
// weight, views of halves, add/mul/scale/softmax, and an input no node reads.
static struct graph build(int n) {
    struct graph r;
    struct ggml_init_params ip = {ggml_tensor_overhead() * 256 + ggml_graph_overhead(), NULL, true};
    r.ctx = ggml_init(ip);
    r.in = ggml_new_tensor_2d(r.ctx, GGML_TYPE_F32, n, n);
    ggml_set_name(r.in, "in");
    ggml_set_input(r.in);
    r.unread = ggml_new_tensor_1d(r.ctx, GGML_TYPE_F32, 4 * n);
    ggml_set_name(r.unread, "unread");
    ggml_set_input(r.unread);
    struct ggml_tensor * x = ggml_mul_mat(r.ctx, r.in, r.in);
    struct ggml_tensor * a = ggml_view_2d(r.ctx, x, n / 2, n, x->nb[1], 0);
    struct ggml_tensor * b = ggml_view_2d(r.ctx, x, n / 2, n, x->nb[1], (size_t) (n / 2) * ggml_element_size(x));
    struct ggml_tensor * y = ggml_add(r.ctx, ggml_cont(r.ctx, a), ggml_cont(r.ctx, b));
    y = ggml_scale(r.ctx, y, 0.5f);
    y = ggml_soft_max(r.ctx, y);
    y = ggml_mul(r.ctx, y, ggml_sqr(r.ctx, y));
    r.out = ggml_sum_rows(r.ctx, y);
    ggml_set_name(r.out, "out");
    ggml_set_output(r.out);
    r.g = ggml_new_graph(r.ctx);
    ggml_build_forward_expand(r.g, r.unread); // a leaf of the graph that no node reads
    ggml_build_forward_expand(r.g, r.out);
    return r;
}

// compute writes the input of r (placed already: n x n values of a fixed
// sine), computes r on be and reads its output into dst (n floats); it
// returns 1 on success.
static int compute(ggml_backend_t be, struct graph * r, int n, float * dst) {
    float * in = (float *) malloc(sizeof(float) * (size_t) (n * n));
    for (int i = 0; i < n * n; i++) {
        in[i] = sinf((float) i * 0.37f);
    }
    ggml_backend_tensor_set(r->in, in, 0, ggml_nbytes(r->in));
    free(in);
    if (ggml_backend_graph_compute(be, r->g) != GGML_STATUS_SUCCESS) {
        return 0;
    }
    ggml_backend_tensor_get(r->out, dst, 0, ggml_nbytes(r->out));
    return 1;
}

// run allocates a fresh graph with alloc (a gallocr handle) and computes it
// on be; it writes the output to dst (n floats) and returns 0 on success.
static int run(ggml_backend_t be, ggml_gallocr_t alloc, int n, float * dst, int reserve_first) {
    struct graph r = build(n);
    if (reserve_first && !ggml_gallocr_reserve(alloc, r.g)) {
        return 1;
    }
    if (!ggml_gallocr_alloc_graph(alloc, r.g)) {
        return 2;
    }
    if (r.unread->data == NULL || r.in->data == NULL) {
        return 3;
    }
    if (!compute(be, &r, n, dst)) {
        return 4;
    }
    ggml_free(r.ctx);
    return 0;
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gallocr-check BACKENDS_DIR\n");
        return 100;
    }
    ggml_backend_load_all_from_path(argv[1]);
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (be == NULL) {
        fprintf(stderr, "no CPU backend\n");
        return 100;
    }
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(be);
    const int n = 64;
    float want[64], got[64];

    // ggml's own gallocr, called on a handle made by ggml's own
    // ggml_gallocr_new_n: every call on it reaches the library's functions
    // and is forwarded.
    void * base = dlopen("libggml-base.so", RTLD_LAZY | RTLD_NOLOAD);
    ggml_gallocr_t (*real_new_n)(ggml_backend_buffer_type_t *, int) =
        base ? (ggml_gallocr_t (*)(ggml_backend_buffer_type_t *, int)) dlsym(base, "ggml_gallocr_new_n") : NULL;
    check(real_new_n != NULL, "find ggml's ggml_gallocr_new_n", "dlsym failed");
    if (real_new_n == NULL) {
        return failures;
    }
    ggml_gallocr_t foreign = real_new_n(&buft, 1);
    check(run(be, foreign, n, want, 1) == 0, "foreign handle", "allocating or computing failed");
    ggml_gallocr_free(foreign);

    // reserve_n_size, then reserve_n: the sizes match.
    ggml_gallocr_t a = ggml_gallocr_new(buft);
    struct graph r = build(n);
    size_t size = 0;
    ggml_gallocr_reserve_n_size(a, r.g, NULL, NULL, &size);
    int ok = ggml_gallocr_reserve_n(a, r.g, NULL, NULL);
    char why[256];
    snprintf(why, sizeof why, "reserve_n_size said %zu, reserve_n allocated %zu (ok %d)", size,
             ggml_gallocr_get_buffer_size(a, 0), ok);
    check(ok && size > 0 && size == ggml_gallocr_get_buffer_size(a, 0), "reserve_n_size matches reserve_n", why);
    ggml_free(r.ctx);

    // allocate and compute: the output is gallocr's.
    int e = run(be, a, n, got, 0);
    snprintf(why, sizeof why, "run returned %d", e);
    check(e == 0, "alloc_graph and compute", why);
    check(e == 0 && memcmp(want, got, sizeof want) == 0, "output equals gallocr's", "outputs differ");
    // a second graph of the same structure (a plan-cache hit), then a larger one
    e = run(be, a, n, got, 0);
    check(e == 0 && memcmp(want, got, sizeof want) == 0, "second graph equals gallocr's", "outputs differ");
    float big_want[128], big_got[128];
    ggml_gallocr_t f2 = real_new_n(&buft, 1);
    run(be, f2, 128, big_want, 0);
    ggml_gallocr_free(f2);
    size_t before = ggml_gallocr_get_buffer_size(a, 0);
    e = run(be, a, 128, big_got, 0);
    check(e == 0 && memcmp(big_want, big_got, sizeof big_want) == 0, "larger graph equals gallocr's", "outputs differ");
    check(ggml_gallocr_get_buffer_size(a, 0) >= before, "buffer only grows", "buffer shrank");
    ggml_gallocr_free(a);

    // two buffer types: two buffer ids in one allocator
    ggml_backend_buffer_type_t two[2] = {buft, ggml_backend_cpu_buffer_type()};
    ggml_gallocr_t m = ggml_gallocr_new_n(two, 2);
    r = build(n);
    int n_nodes = ggml_graph_n_nodes(r.g);
    int * nids = (int *) calloc((size_t) n_nodes, sizeof(int));
    int * lids = (int *) calloc(16, sizeof(int));
    for (int i = 0; i < n_nodes; i++) {
        nids[i] = i % 2;
    }
    ok = ggml_gallocr_reserve_n(m, r.g, nids, lids) && ggml_gallocr_alloc_graph(m, r.g);
    check(ok, "two buffer ids: reserve_n and alloc_graph", "failed");
    if (ok) {
        ok = compute(be, &r, n, got);
        check(ok && memcmp(want, got, sizeof want) == 0, "two buffer ids: output equals gallocr's", "outputs differ");
    }
    free(nids);
    free(lids);
    ggml_free(r.ctx);
    ggml_gallocr_free(m);

    // two buffer types: the CPU's and a copy of it
    static struct ggml_backend_buffer_type second;
    second = *buft;
    ggml_backend_buffer_type_t distinct[2] = {buft, &second};
    for (int round = 0; round < 2; round++) { // the second round's graph has the reserved counts
        ggml_gallocr_t d = ggml_gallocr_new_n(distinct, 2);
        r = build(n);
        n_nodes = ggml_graph_n_nodes(r.g);
        nids = (int *) calloc((size_t) n_nodes, sizeof(int));
        lids = (int *) calloc(16, sizeof(int));
        for (int i = 0; i < n_nodes; i++) {
            nids[i] = (i + round) % 2;
        }
        for (int i = 0; i < r.g->n_leafs; i++) {
            lids[i] = r.g->leafs[i] == r.in; // the input lives in the second buffer
        }
        size_t sizes[2] = {0, 0};
        ggml_gallocr_reserve_n_size(d, r.g, nids, lids, sizes);
        ok = ggml_gallocr_reserve_n(d, r.g, nids, lids);
        snprintf(why, sizeof why, "reserve_n_size said %zu and %zu, reserve_n allocated %zu and %zu", sizes[0], sizes[1],
                 ggml_gallocr_get_buffer_size(d, 0), ggml_gallocr_get_buffer_size(d, 1));
        check(ok && sizes[0] == ggml_gallocr_get_buffer_size(d, 0) && sizes[1] == ggml_gallocr_get_buffer_size(d, 1),
              "two buffer types: reserve_n_size matches reserve_n", why);
        ok = ok && ggml_gallocr_alloc_graph(d, r.g);
        check(ok, "two buffer types: reserve_n and alloc_graph", "failed");
        int placed_ok = 1;
        for (int i = 0; ok && i < n_nodes; i++) {
            struct ggml_tensor * t = ggml_graph_node(r.g, i);
            // (gallocr runs an in-place op over its parent's bytes, whatever its id)
            if (t->view_src == NULL && t->buffer != NULL && !ggml_op_can_inplace(t->op) &&
                ggml_backend_buffer_get_type(t->buffer) != distinct[nids[i]]) {
                placed_ok = 0;
            }
        }
        check(ok && placed_ok && ggml_backend_buffer_get_type(r.in->buffer) == &second,
              "two buffer types: every tensor in the buffer of its id", "a tensor is in the other buffer");
        snprintf(why, sizeof why, "sizes %zu and %zu", ggml_gallocr_get_buffer_size(d, 0), ggml_gallocr_get_buffer_size(d, 1));
        check(ggml_gallocr_get_buffer_size(d, 0) > 0 && ggml_gallocr_get_buffer_size(d, 1) > 0,
              "two buffer types: two buffers", why);
        if (ok) {
            ok = compute(be, &r, n, got);
            check(ok && memcmp(want, got, sizeof want) == 0, "two buffer types: output equals gallocr's", "outputs differ");
        }
        free(nids);
        free(lids);
        ggml_free(r.ctx);
        ggml_gallocr_free(d);
    }
    ggml_backend_free(be);
    return failures;
}
