// Helpers the C files of the integration share (not part of its API).

#ifndef SA_INTERNAL_H
#define SA_INTERNAL_H

#include "sa_ggml.h"

#include <stdlib.h>
#include <string.h>

// Inlined on the hit path (sa_hit): the calls cost more than the bodies.
#if defined(__GNUC__)
#define SA_INLINE static inline __attribute__((always_inline))
#else
#define SA_INLINE static inline
#endif

// sa_reserve grows an array of elements of elem bytes, holding *cap of them,
// to hold at least n: the capacity doubles from *cap, or from first when
// *cap is 0, until it does. pp is the address of the array's pointer,
// whatever its element type. It returns 0, or -1 when realloc fails (the
// array and *cap are then as they were).
static inline int sa_reserve(void * pp, int64_t * cap, int64_t n, int64_t first, size_t elem) {
    if (n <= *cap) {
        return 0;
    }
    int64_t want = *cap > 0 ? *cap : first;
    while (want < n) {
        want *= 2;
    }
    void * p;
    memcpy(&p, pp, sizeof p);
    void * q = realloc(p, (size_t) want * elem);
    if (q == NULL) {
        return -1;
    }
    memcpy(pp, &q, sizeof q);
    *cap = want;
    return 0;
}

// sa_nbytes is ggml_nbytes of a tensor of t's type and ne with strides nb.
SA_INLINE int64_t sa_nbytes(const sa_state * s, const struct ggml_tensor * t, const int64_t * nb) {
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        if (t->ne[d] <= 0) {
            return 0;
        }
    }
    const int64_t blck = s->blck[t->type];
    int64_t n;
    if (blck == 1) {
        n = s->tsize[t->type];
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            n += (t->ne[d] - 1) * nb[d];
        }
    } else {
        n = t->ne[0] * nb[0] / blck;
        for (int d = 1; d < GGML_MAX_DIMS; d++) {
            n += (t->ne[d] - 1) * nb[d];
        }
    }
    return n;
}

#endif
