// kernel-check: runs one CPU kernel of the pinned llama.cpp release with its
// output over each input it may overlay and with separate memory, and
// compares the outputs byte for byte: the check behind an entry of
// integrations/ggml/kernels' table of kernels verified in place.
//
//   kernel-check BACKEND OP VARIANT TYPE THREADS
//
// BACKEND is the release's library directory, whose best CPU backend for
// this machine is loaded (ggml_backend_load_all_from_path), or one CPU
// backend library of it (libggml-cpu-haswell.so, ...): the release ships
// one per x86-64 feature level, each with its own SIMD paths, and the
// tests run every one this machine can execute. A library the machine
// cannot run (its ggml_backend_score is 0) is skipped: "skip" and status 0.
//
// OP, VARIANT and TYPE are as the table names them (ggml_op_name, the
// variant's name, "" for none, ggml_type_name); THREADS is the CPU
// backend's thread count. It prints one line per case ("ok CASE" or
// "FAIL CASE: why") and exits with the number of failures; 100 on a usage
// or setup error, and 101 when it has no check for the entry (an entry
// added to the table without one).
//
//   kernel-check BACKEND control "" f32 THREADS
//
// is the check of the check: SWIGLU with its output one element past its
// first source, an overlay no kernel table would allow, must differ from
// separate memory (it prints "ok control" when it does).
//
// Every case builds the op on inputs of ne {131, 37, 3, 1} (rows that are
// no multiple of any SIMD width, split unevenly between threads) filled
// with fixed pseudo-random values over [-12, 12) (both sides of GEGLU's
// ±10 cut-offs, and of SWIGLU_OAI's and SWIGLU_CLAMP's limit), computes
// it once into its own memory and once with the output at the address of
// the overlaid input, in a fresh graph each time, and compares.

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-impl.h" // ggml_set_op_params_i32: the swapped flag
#include "ggml.h"

static int failures;

static void check(int ok, const char * name, const char * why) {
    if (ok) {
        printf("ok %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, why);
        failures++;
    }
}

enum { MAX_SRC = 2 };
static const int64_t NE[4] = {131, 37, 3, 1};

// A build makes the op's output from its sources (param: a case's variant
// of the op parameters) in ctx.
typedef struct ggml_tensor * (*build_fn)(struct ggml_context * ctx, struct ggml_tensor ** src, int param);

struct kernel {
    const char * op, * variant;
    int n_src;        // sources, all of ne NE and the entry's type
    int overlay_mask; // bit j: the output may overlay source j
    int n_params;     // build parameters to run (0 .. n_params-1)
    build_fn build;
    const char * types; // the types the kernel is checked for, space-separated
};

// GLU, two sources: param 0 and 1 are the swapped flag (op_params[1]),
// which the kernel reads only with one source.
static struct ggml_tensor * glu_split(struct ggml_context * ctx, struct ggml_tensor ** s, int param, enum ggml_glu_op op) {
    struct ggml_tensor * t = ggml_glu_split(ctx, s[0], s[1], op);
    ggml_set_op_params_i32(t, 1, param);
    return t;
}

static struct ggml_tensor * b_reglu(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return glu_split(c, s, p, GGML_GLU_OP_REGLU);
}
static struct ggml_tensor * b_geglu(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return glu_split(c, s, p, GGML_GLU_OP_GEGLU);
}
static struct ggml_tensor * b_swiglu(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return glu_split(c, s, p, GGML_GLU_OP_SWIGLU);
}
static struct ggml_tensor * b_geglu_erf(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return glu_split(c, s, p, GGML_GLU_OP_GEGLU_ERF);
}
static struct ggml_tensor * b_geglu_quick(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return glu_split(c, s, p, GGML_GLU_OP_GEGLU_QUICK);
}
// SWIGLU_OAI and SWIGLU_CLAMP: alpha and limit as gpt-oss uses them, and a
// tight limit; each with the swapped flag off and on.
static struct ggml_tensor * b_swiglu_oai(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    struct ggml_tensor * t = ggml_swiglu_oai(c, s[0], s[1], 1.702f, (p & 2) ? 0.5f : 7.0f);
    ggml_set_op_params_i32(t, 1, p & 1);
    return t;
}
static struct ggml_tensor * b_swiglu_clamp(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    struct ggml_tensor * t = ggml_swiglu_clamp(c, s[0], s[1], (p & 2) ? 0.5f : 7.0f);
    ggml_set_op_params_i32(t, 1, p & 1);
    return t;
}

// NORM (LayerNorm without weights): param picks eps.
static struct ggml_tensor * b_norm(struct ggml_context * c, struct ggml_tensor ** s, int p) {
    return ggml_norm(c, s[0], p ? 1e-2f : 1e-5f);
}

static const struct kernel kernels[] = {
    {"GLU", "REGLU", 2, 3, 2, b_reglu, "f32 f16"},
    {"GLU", "GEGLU", 2, 3, 2, b_geglu, "f32 f16"},
    {"GLU", "SWIGLU", 2, 3, 2, b_swiglu, "f32 f16"},
    {"GLU", "SWIGLU_OAI", 2, 3, 4, b_swiglu_oai, "f32"},
    {"GLU", "GEGLU_ERF", 2, 3, 2, b_geglu_erf, "f32 f16"},
    {"GLU", "GEGLU_QUICK", 2, 3, 2, b_geglu_quick, "f32 f16"},
    {"GLU", "SWIGLU_CLAMP", 2, 3, 4, b_swiglu_clamp, "f32 f16"},
    {"NORM", "", 1, 1, 2, b_norm, "f32"},
};

static int has_word(const char * list, const char * w) {
    size_t n = strlen(w);
    for (const char * p = list; (p = strstr(p, w)) != NULL; p += n) {
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ')) {
            return 1;
        }
    }
    return 0;
}

static uint32_t rng_state;

static float next_value(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return ((float) (rng_state >> 8) / (float) (1u << 24)) * 24.0f - 12.0f;
}

// run computes the kernel's output once, into out (its bytes): with the
// output at source `overlay`'s address plus shift bytes, or in its own
// memory when overlay is -1. It returns 0 on success.
static int run(ggml_backend_t be, ggml_backend_buffer_type_t buft, const struct kernel * k, enum ggml_type type,
               int param, int overlay, size_t shift, uint8_t * out, size_t out_size) {
    struct ggml_init_params ip = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * src[MAX_SRC] = {NULL};
    for (int j = 0; j < k->n_src; j++) {
        src[j] = ggml_new_tensor(ctx, type, 4, NE);
    }
    struct ggml_tensor * dst = k->build(ctx, src, param);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, dst);
    const size_t align = ggml_backend_buft_get_alignment(buft);
    size_t size = ggml_nbytes(dst) + align + shift;
    for (int j = 0; j < k->n_src; j++) {
        size += ggml_nbytes(src[j]) + align;
    }
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, size);
    if (buf == NULL) {
        ggml_free(ctx);
        return 1;
    }
    uint8_t * base = (uint8_t *) ggml_backend_buffer_get_base(buf);
    size_t at = 0;
    for (int j = 0; j < k->n_src; j++) {
        ggml_backend_tensor_alloc(buf, src[j], base + at);
        at += (ggml_nbytes(src[j]) + align - 1) / align * align;
    }
    ggml_backend_tensor_alloc(buf, dst, overlay >= 0 ? (uint8_t *) src[overlay]->data + shift : base + at);
    rng_state = 12345;
    int rc = 0;
    for (int j = 0; j < k->n_src && rc == 0; j++) {
        const int64_t n = ggml_nelements(src[j]);
        float * v = (float *) malloc(sizeof(float) * (size_t) n);
        for (int64_t i = 0; i < n; i++) {
            v[i] = next_value();
        }
        if (type == GGML_TYPE_F32) {
            ggml_backend_tensor_set(src[j], v, 0, ggml_nbytes(src[j]));
        } else if (type == GGML_TYPE_F16) {
            ggml_fp16_t * h = (ggml_fp16_t *) malloc(sizeof(ggml_fp16_t) * (size_t) n);
            ggml_fp32_to_fp16_row(v, h, n);
            ggml_backend_tensor_set(src[j], h, 0, ggml_nbytes(src[j]));
            free(h);
        } else {
            rc = 2;
        }
        free(v);
    }
    if (rc == 0 && ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) {
        rc = 3;
    }
    if (rc == 0 && ggml_nbytes(dst) != out_size) {
        rc = 4;
    }
    if (rc == 0) {
        ggml_backend_tensor_get(dst, out, 0, out_size);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return rc;
}

int main(int argc, char ** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: kernel-check BACKEND OP VARIANT TYPE THREADS\n");
        return 100;
    }
    const char * op = argv[2], * variant = argv[3], * type_name = argv[4];
    const int threads = atoi(argv[5]);
    const struct kernel * k = NULL;
    const int control = strcmp(op, "control") == 0;
    if (control) {
        op = "GLU";
        variant = "SWIGLU";
    }
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        if (strcmp(kernels[i].op, op) == 0 && strcmp(kernels[i].variant, variant) == 0) {
            k = &kernels[i];
        }
    }
    if (k == NULL || !has_word(k->types, type_name)) {
        printf("FAIL no kernel check for %s %s %s\n", op, variant, type_name);
        return 101;
    }
    enum ggml_type type = GGML_TYPE_COUNT;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char * n = ggml_type_name((enum ggml_type) t);
        if (n != NULL && strcmp(n, type_name) == 0) {
            type = (enum ggml_type) t;
        }
    }
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_F16) {
        fprintf(stderr, "kernel-check: type %s is not f32 or f16\n", type_name);
        return 100;
    }
    const size_t len = strlen(argv[1]);
    if (len > 3 && strcmp(argv[1] + len - 3, ".so") == 0) {
        void * h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        int (*score)(void) = h ? (int (*)(void)) dlsym(h, "ggml_backend_score") : NULL;
        if (score == NULL) {
            fprintf(stderr, "kernel-check: %s: no ggml_backend_score\n", argv[1]);
            return 100;
        }
        if (score() == 0) {
            printf("skip %s: this machine cannot run it\n", argv[1]);
            return 0;
        }
        if (ggml_backend_load(argv[1]) == NULL) {
            fprintf(stderr, "kernel-check: loading %s failed\n", argv[1]);
            return 100;
        }
    } else {
        ggml_backend_load_all_from_path(argv[1]);
    }
    ggml_backend_t be = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (be == NULL || threads < 1) {
        fprintf(stderr, "kernel-check: no CPU backend, or threads %d\n", threads);
        return 100;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(be));
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (set_threads == NULL) {
        fprintf(stderr, "kernel-check: the CPU backend has no ggml_backend_set_n_threads\n");
        return 100;
    }
    set_threads(be, threads);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(be);
    const size_t out_size = (size_t) (NE[0] * NE[1] * NE[2] * NE[3]) * ggml_type_size(type);
    uint8_t * want = (uint8_t *) malloc(out_size), * got = (uint8_t *) malloc(out_size);
    if (control) {
        int rc = run(be, buft, k, type, 0, -1, 0, want, out_size);
        int rc2 = run(be, buft, k, type, 0, 0, ggml_type_size(type), got, out_size);
        char why[128];
        snprintf(why, sizeof why, "runs returned %d and %d, the outputs are %s", rc, rc2,
                 memcmp(want, got, out_size) == 0 ? "identical" : "different");
        check(rc == 0 && rc2 == 0 && memcmp(want, got, out_size) != 0, "control", why);
        ggml_backend_free(be);
        return failures;
    }
    for (int param = 0; param < k->n_params; param++) {
        char name[256], why[256];
        int rc = run(be, buft, k, type, param, -1, 0, want, out_size);
        snprintf(name, sizeof name, "%s %s %s threads %d param %d: separate memory", op, variant, type_name, threads, param);
        snprintf(why, sizeof why, "run returned %d", rc);
        check(rc == 0, name, why);
        if (rc != 0) {
            continue;
        }
        int nonzero = 0;
        for (size_t i = 0; i < out_size; i++) {
            nonzero |= want[i] != 0;
        }
        snprintf(name, sizeof name, "%s %s %s threads %d param %d: output not all zero", op, variant, type_name, threads, param);
        check(nonzero, name, "the output is all zero bytes"); // the comparison below must be able to fail
        for (int j = 0; j < k->n_src; j++) {
            if (!(k->overlay_mask & (1 << j))) {
                continue;
            }
            memset(got, 0xa5, out_size);
            rc = run(be, buft, k, type, param, j, 0, got, out_size);
            snprintf(name, sizeof name, "%s %s %s threads %d param %d: output over source %d", op, variant, type_name, threads,
                     param, j);
            size_t first = out_size;
            for (size_t i = 0; rc == 0 && i < out_size; i++) {
                if (want[i] != got[i]) {
                    first = i;
                    break;
                }
            }
            snprintf(why, sizeof why, "run returned %d, first differing byte %zu of %zu", rc, first, out_size);
            check(rc == 0 && first == out_size, name, why);
        }
    }
    free(want);
    free(got);
    ggml_backend_free(be);
    return failures;
}
