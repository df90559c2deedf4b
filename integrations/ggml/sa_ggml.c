#include "sa_ggml.h"

#include <stdlib.h>
#include <string.h>

#if defined(_WIN32)
#include <malloc.h>
#else
#include <sys/mman.h>
#endif

sa_state * sa_state_new(ggml_backend_buffer_type_t buft) {
    sa_state * s = (sa_state *) calloc(1, sizeof(sa_state));
    if (s != NULL) {
        s->buft = buft;
    }
    return s;
}

void sa_state_free(sa_state * s) {
    if (s == NULL) {
        return;
    }
    free(s->recs);
    free(s->keys);
    free(s->vals);
    free(s->relaid);
    free(s->rkeys);
    free(s->rvals);
    free(s);
}

static inline uint32_t sa_ptr_hash(const void * p) {
    uint64_t x = (uint64_t) (uintptr_t) p;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (uint32_t) x;
}

// table_find returns the slot of key, or of the empty slot where it would go.
static inline int32_t table_find(struct ggml_tensor ** keys, int32_t cap, const struct ggml_tensor * key) {
    uint32_t mask = (uint32_t) cap - 1;
    uint32_t i = sa_ptr_hash(key) & mask;
    while (keys[i] != NULL && keys[i] != key) {
        i = (i + 1) & mask;
    }
    return (int32_t) i;
}

static int table_reserve(sa_state * s, int32_t n) {
    int32_t want = 64;
    while (want < 2 * n) {
        want *= 2;
    }
    if (want <= s->hcap) {
        return 0;
    }
    struct ggml_tensor ** keys = (struct ggml_tensor **) calloc((size_t) want, sizeof(*keys));
    int32_t * vals = (int32_t *) malloc((size_t) want * sizeof(*vals));
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return -1;
    }
    for (int32_t i = 0; i < s->hcap; i++) {
        if (s->keys[i] != NULL) {
            int32_t j = table_find(keys, want, s->keys[i]);
            keys[j] = s->keys[i];
            vals[j] = s->vals[i];
        }
    }
    free(s->keys);
    free(s->vals);
    s->keys = keys;
    s->vals = vals;
    s->hcap = want;
    return 0;
}

static int recs_reserve(sa_state * s, int32_t n) {
    if (n <= s->cap_recs) {
        return 0;
    }
    int32_t want = s->cap_recs > 0 ? s->cap_recs : 64;
    while (want < n) {
        want *= 2;
    }
    sa_rec * r = (sa_rec *) realloc(s->recs, (size_t) want * sizeof(sa_rec));
    if (r == NULL) {
        return -1;
    }
    s->recs = r;
    s->cap_recs = want;
    return 0;
}

// rec_of returns the record index of t, appending a leaf record when t is new.
static int32_t rec_of(sa_state * s, struct ggml_tensor * t) {
    int32_t i = table_find(s->keys, s->hcap, t);
    if (s->keys[i] == t) {
        return s->vals[i];
    }
    if (2 * (s->n_recs + 1) > s->hcap) {
        if (table_reserve(s, s->n_recs + 1) != 0) {
            return -1;
        }
        i = table_find(s->keys, s->hcap, t);
    }
    if (recs_reserve(s, s->n_recs + 1) != 0) {
        return -1;
    }
    int32_t r = s->n_recs++;
    s->keys[i] = t;
    s->vals[i] = r;
    sa_rec * rec = &s->recs[r];
    rec->t = t;
    rec->node = -1;
    return r;
}

static inline int sa_is_own_base(const sa_state * s, const struct ggml_tensor * t) {
    if (t->buffer != NULL) {
        return s->buffer != NULL && t->buffer == s->buffer;
    }
    return t->data == NULL;
}

// relaid_find returns the relaid entry of t placed by the last placement
// and still carrying its strides, or NULL.
static const sa_relaid * relaid_find(const sa_state * s, const struct ggml_tensor * t) {
    if (s->n_relaid == 0) {
        return NULL;
    }
    uint32_t mask = (uint32_t) s->rcap - 1;
    uint32_t i = sa_ptr_hash(t) & mask;
    while (s->rkeys[i] != NULL) {
        if (s->rkeys[i] == t) {
            const sa_relaid * e = &s->relaid[s->rvals[i]];
            for (int k = 0; k < GGML_MAX_DIMS; k++) {
                if ((int64_t) t->nb[k] != e->new_nb[k]) {
                    return NULL;
                }
            }
            if ((int64_t) t->view_offs != e->new_offs) {
                return NULL;
            }
            return e;
        }
        i = (i + 1) & mask;
    }
    return NULL;
}

#define SA_K1 0x9e3779b97f4a7c15ULL
#define SA_K2 0xc2b2ae3d27d4eb4fULL

static inline uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v * SA_K1;
    h = (h << 31) | (h >> 33);
    return h * SA_K2;
}

static inline uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

int32_t sa_scan(sa_state * s, struct ggml_cgraph * g) {
    const int32_t n_nodes = ggml_graph_n_nodes(g);
    s->n_recs = 0;
    s->n_nodes = n_nodes;
    if (table_reserve(s, n_nodes + 16) != 0 || recs_reserve(s, n_nodes + 16) != 0) {
        return -1;
    }
    memset(s->keys, 0, (size_t) s->hcap * sizeof(*s->keys));
    for (int32_t i = 0; i < n_nodes; i++) {
        struct ggml_tensor * t = ggml_graph_node(g, i);
        int32_t r = rec_of(s, t);
        if (r < 0) {
            return -1;
        }
        if (s->recs[r].node < 0) {
            s->recs[r].node = i;
        }
    }
    // Links: srcs of nodes, view_src of everything (leaves reached last).
    for (int32_t r = 0; r < s->n_recs; r++) {
        struct ggml_tensor * t = s->recs[r].t;
        int is_node = s->recs[r].node >= 0;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            int32_t x = -1;
            if (is_node && t->src[j] != NULL) {
                x = rec_of(s, t->src[j]);
                if (x < 0) {
                    return -1;
                }
            }
            s->recs[r].src[j] = x;
        }
        int32_t v = -1;
        if (t->view_src != NULL) {
            v = rec_of(s, t->view_src);
            if (v < 0) {
                return -1;
            }
        }
        s->recs[r].view_src = v;
    }
    // Kinds, strides and the hash.
    uint64_t h = mix(mix(0x5a5a5a5a, (uint64_t) n_nodes), (uint64_t) s->n_recs);
    for (int32_t r = 0; r < s->n_recs; r++) {
        sa_rec * rec = &s->recs[r];
        struct ggml_tensor * t = rec->t;
        const sa_relaid * e = NULL;
        if (s->n_relaid > 0 && t->buffer != NULL && t->buffer == s->buffer) {
            e = relaid_find(s, t);
        }
        for (int k = 0; k < GGML_MAX_DIMS; k++) {
            rec->nb[k] = e != NULL ? e->orig_nb[k] : (int64_t) t->nb[k];
        }
        rec->view_offs = e != NULL ? e->orig_offs : (int64_t) t->view_offs;
        rec->alloc_size = 0;
        int own;
        if (rec->view_src >= 0) {
            own = sa_is_own_base(s, s->recs[rec->view_src].t);
            rec->kind = own ? SA_VIEW_OWN : SA_VIEW_EXT;
        } else {
            own = sa_is_own_base(s, t);
            rec->kind = own ? SA_OWN : SA_EXT;
        }
        h = mix(h, (uint64_t) rec->kind | ((uint64_t) (rec->node >= 0) << 8) | ((uint64_t) (uint32_t) rec->view_src << 16));
        if (rec->node >= 0) {
            h = mix(h, (uint64_t) t->op);
            if (t->op == GGML_OP_UNARY || t->op == GGML_OP_GLU) {
                h = mix(h, (uint64_t) (uint32_t) t->op_params[0]);
            }
            for (int j = 0; j < GGML_MAX_SRC; j++) {
                h = mix(h, (uint64_t) (uint32_t) rec->src[j]);
            }
        }
        if (own) {
            h = mix(h, (uint64_t) t->type | ((uint64_t) (t->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT)) << 32));
            for (int k = 0; k < GGML_MAX_DIMS; k++) {
                h = mix(h, (uint64_t) t->ne[k]);
                h = mix(h, (uint64_t) rec->nb[k]);
            }
            if (rec->kind == SA_VIEW_OWN) {
                h = mix(h, (uint64_t) rec->view_offs);
            }
        }
    }
    s->hash = finish(h);
    return s->n_recs;
}

// sa_sizes fills alloc_size of the own records (with the graph's own strides).
int32_t sa_sizes(sa_state * s) {
    for (int32_t r = 0; r < s->n_recs; r++) {
        sa_rec * rec = &s->recs[r];
        if (rec->kind != SA_OWN) {
            continue;
        }
        struct ggml_tensor * t = rec->t;
        size_t saved[GGML_MAX_DIMS];
        int changed = 0;
        for (int k = 0; k < GGML_MAX_DIMS; k++) {
            saved[k] = t->nb[k];
            if ((int64_t) t->nb[k] != rec->nb[k]) {
                changed = 1;
            }
        }
        if (changed) {
            for (int k = 0; k < GGML_MAX_DIMS; k++) {
                t->nb[k] = (size_t) rec->nb[k];
            }
        }
        rec->alloc_size = (int64_t) ggml_backend_buft_get_alloc_size(s->buft, t);
        if (changed) {
            for (int k = 0; k < GGML_MAX_DIMS; k++) {
                t->nb[k] = saved[k];
            }
        }
    }
    return 0;
}

static int relaid_rebuild(sa_state * s, const sa_place * pl, int32_t n) {
    int32_t count = 0;
    for (int32_t r = 0; r < n; r++) {
        if (pl[r].relaid) {
            count++;
        }
    }
    s->n_relaid = 0;
    if (count == 0) {
        return 0;
    }
    if (count > s->cap_relaid) {
        sa_relaid * e = (sa_relaid *) realloc(s->relaid, (size_t) count * sizeof(sa_relaid));
        if (e == NULL) {
            return -1;
        }
        s->relaid = e;
        s->cap_relaid = count;
    }
    int32_t want = 16;
    while (want < 2 * count) {
        want *= 2;
    }
    if (want > s->rcap) {
        free(s->rkeys);
        free(s->rvals);
        s->rkeys = (struct ggml_tensor **) malloc((size_t) want * sizeof(*s->rkeys));
        s->rvals = (int32_t *) malloc((size_t) want * sizeof(*s->rvals));
        if (s->rkeys == NULL || s->rvals == NULL) {
            s->rcap = 0;
            return -1;
        }
        s->rcap = want;
    }
    memset(s->rkeys, 0, (size_t) s->rcap * sizeof(*s->rkeys));
    for (int32_t r = 0; r < n; r++) {
        if (!pl[r].relaid) {
            continue;
        }
        const sa_rec * rec = &s->recs[r];
        sa_relaid * e = &s->relaid[s->n_relaid];
        e->t = rec->t;
        for (int k = 0; k < GGML_MAX_DIMS; k++) {
            e->orig_nb[k] = rec->nb[k];
            e->new_nb[k] = pl[r].nb[k];
        }
        e->orig_offs = rec->view_offs;
        e->new_offs = rec->kind == SA_VIEW_OWN ? pl[r].view_offs : rec->view_offs;
        int32_t i = table_find(s->rkeys, s->rcap, rec->t);
        s->rkeys[i] = rec->t;
        s->rvals[i] = s->n_relaid;
        s->n_relaid++;
    }
    return 0;
}

int32_t sa_apply(sa_state * s, const sa_place * pl, int32_t n, int32_t n_relaid) {
    if (n != s->n_recs || s->buffer == NULL) {
        return n + 1;
    }
    char * base = (char *) ggml_backend_buffer_get_base(s->buffer);
    for (int32_t r = 0; r < n; r++) {
        const sa_rec * rec = &s->recs[r];
        if (rec->kind != SA_OWN || pl[r].offset < 0) {
            continue;
        }
        struct ggml_tensor * t = rec->t;
        t->buffer = NULL;
        t->data = NULL;
        const int64_t * nb = pl[r].relaid ? pl[r].nb : rec->nb;
        for (int k = 0; k < GGML_MAX_DIMS; k++) {
            t->nb[k] = (size_t) nb[k];
        }
        if (ggml_backend_tensor_alloc(s->buffer, t, base + pl[r].offset) != GGML_STATUS_SUCCESS) {
            return r + 1;
        }
    }
    for (int32_t r = 0; r < n; r++) {
        const sa_rec * rec = &s->recs[r];
        struct ggml_tensor * t = rec->t;
        if (rec->kind == SA_VIEW_OWN) {
            t->buffer = NULL;
            t->data = NULL;
            const int64_t * nb = pl[r].relaid ? pl[r].nb : rec->nb;
            for (int k = 0; k < GGML_MAX_DIMS; k++) {
                t->nb[k] = (size_t) nb[k];
            }
            t->view_offs = (size_t) (pl[r].relaid ? pl[r].view_offs : rec->view_offs);
            if (ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
                return r + 1;
            }
        } else if (rec->kind == SA_VIEW_EXT) {
            if (t->buffer == NULL && t->view_src->buffer != NULL) {
                if (ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
                    return r + 1;
                }
            }
        }
    }
    if ((s->n_relaid > 0 || n_relaid > 0) && relaid_rebuild(s, pl, n) != 0) {
        return n + 1;
    }
    return 0;
}

int32_t sa_hit(sa_state * s, struct ggml_cgraph * g, uint64_t want, const sa_place * pl, int32_t n, int32_t n_relaid) {
    int32_t got = sa_scan(s, g);
    if (got < 0) {
        return -1;
    }
    if (s->hash != want || got != n) {
        return 0;
    }
    return sa_apply(s, pl, n, n_relaid) == 0 ? 1 : -1;
}

void * sa_arena_alloc(size_t size) {
    if (size == 0) {
        size = 1;
    }
#if defined(_WIN32)
    return _aligned_malloc(size, 4096);
#else
    void * p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
}

void sa_arena_free(void * p, size_t size) {
    if (p == NULL) {
        return;
    }
#if defined(_WIN32)
    (void) size;
    _aligned_free(p);
#else
    munmap(p, size == 0 ? 1 : size);
#endif
}
