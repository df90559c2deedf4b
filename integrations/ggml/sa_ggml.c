#include "sa_ggml.h"

// struct ggml_cgraph, for its leaf list, and the buffer (type) interfaces,
// to skip what ggml's accessors would only assert: the release's private
// headers.
#include "ggml-impl.h"
#include "ggml-backend-impl.h"

#include "sa_internal.h"

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
        for (int i = 0; i < GGML_TYPE_COUNT; i++) {
            s->blck[i] = ggml_blck_size((enum ggml_type) i);
            s->tsize[i] = (int64_t) ggml_type_size((enum ggml_type) i);
        }
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
    free(s->key);
    free(s->xkeys);
    free(s->graph_leafs);
    free(s->last_key);
    free(s->last_dims);
    free(s->last_pairs);
    free(s->last_place);
    free(s->fp);
    free(s->fp_head);
    free(s->fl);
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
    return sa_reserve(&s->recs, &s->cap_recs, n, 64, sizeof(sa_rec));
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

// sa_excluded reports whether t is in the excluded set.
static inline int sa_excluded(const sa_state * s, const struct ggml_tensor * t) {
    if (s->n_excluded == 0) {
        return 0;
    }
    uint32_t mask = (uint32_t) s->xcap - 1;
    for (uint32_t i = sa_ptr_hash(t) & mask; s->xkeys[i] != NULL; i = (i + 1) & mask) {
        if (s->xkeys[i] == t) {
            return 1;
        }
    }
    return 0;
}

int32_t sa_exclude(sa_state * s, struct ggml_tensor * const * ts, int32_t n) {
    s->n_excluded = 0;
    if (n <= 0) {
        return 0;
    }
    int32_t want = 64;
    while (want < 2 * n) {
        want *= 2;
    }
    if (want > s->xcap) {
        struct ggml_tensor ** keys = (struct ggml_tensor **) malloc((size_t) want * sizeof(*keys));
        if (keys == NULL) {
            return -1;
        }
        free(s->xkeys);
        s->xkeys = keys;
        s->xcap = want;
    }
    memset(s->xkeys, 0, (size_t) s->xcap * sizeof(*s->xkeys));
    uint32_t mask = (uint32_t) s->xcap - 1;
    for (int32_t j = 0; j < n; j++) {
        uint32_t i = sa_ptr_hash(ts[j]) & mask;
        while (s->xkeys[i] != NULL && s->xkeys[i] != ts[j]) {
            i = (i + 1) & mask;
        }
        s->xkeys[i] = ts[j];
    }
    s->n_excluded = n;
    return 0;
}

static inline int sa_is_own_base(const sa_state * s, const struct ggml_tensor * t) {
    if (sa_excluded(s, t)) {
        return 0;
    }
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

static int key_reserve(sa_state * s, int64_t n) {
    return sa_reserve(&s->key, &s->cap_key, n, 1024, sizeof(uint64_t));
}

// The most key words one record takes: a header and five words of sources.
// The key is the graph's topology: the sizes (ne, nb, view offsets) of
// its own tensors are compared with a plan's by sa_fit, not keyed.
#define SA_KEY_MAX (1 + GGML_MAX_SRC / 2)

// relaid_of is relaid_find for record rec, through its hint when the last
// placement set the hints after the last scan.
SA_INLINE const sa_relaid * relaid_of(const sa_state * s, const sa_rec * rec) {
    if (!s->relaid_hints) {
        return relaid_find(s, rec->t);
    }
    if (rec->relaid < 0) {
        return NULL;
    }
    const sa_relaid * e = &s->relaid[rec->relaid];
    const struct ggml_tensor * t = rec->t;
    if (e->t != t) {
        return relaid_find(s, t);
    }
    for (int k = 0; k < GGML_MAX_DIMS; k++) {
        if ((int64_t) t->nb[k] != e->new_nb[k]) {
            return NULL;
        }
    }
    return (int64_t) t->view_offs == e->new_offs ? e : NULL;
}

// rec_head sets the kind, strides and view offset of a linked record and
// returns its first key word.
SA_INLINE uint64_t rec_head(const sa_state * s, sa_rec * rec) {
    const struct ggml_tensor * t = rec->t;
    const sa_relaid * e = NULL;
    if (s->n_relaid > 0 && t->buffer != NULL && t->buffer == s->buffer) {
        e = relaid_of(s, rec);
    }
    int own;
    if (rec->view_src >= 0) {
        own = sa_is_own_base(s, s->recs[rec->view_src].t);
        rec->kind = own ? SA_VIEW_OWN : SA_VIEW_EXT;
    } else {
        own = sa_is_own_base(s, t);
        rec->kind = own ? SA_OWN : SA_EXT;
    }
    rec->alloc_size = 0;
    const int is_node = rec->node >= 0;
    uint64_t head = (uint64_t) rec->kind | ((uint64_t) is_node << 2) | ((uint64_t) (uint32_t) rec->view_src << 32);
    if (is_node) {
        uint64_t sub = (t->op == GGML_OP_UNARY || t->op == GGML_OP_GLU) ? (uint64_t) (uint8_t) t->op_params[0] : 0;
        head |= ((uint64_t) (t->op & 0xff) << 8) | (sub << 16);
    }
    if (own) {
        head |= ((uint64_t) (t->type & 0x3f) << 24) |
                ((uint64_t) (t->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT)) << 30);
    } else if (t->extra != NULL) {
        head |= 1 << 3; // a backend's extra data (repacked weights) changes which kernels run
    }
    if (e != NULL) {
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            rec->nb[d] = e->orig_nb[d];
        }
        rec->view_offs = e->orig_offs;
    } else {
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            rec->nb[d] = (int64_t) t->nb[d];
        }
        rec->view_offs = (int64_t) t->view_offs;
    }
    return head;
}

// rec_key sets the kind, strides and view offset of a linked record and
// writes its key words to k; it returns how many.
static inline int32_t rec_key(const sa_state * s, sa_rec * rec, uint64_t * k) {
    int32_t n = 0;
    k[n++] = rec_head(s, rec);
    if (rec->node >= 0) {
        for (int j = 0; j < GGML_MAX_SRC; j += 2) {
            k[n++] = (uint64_t) (uint32_t) rec->src[j] | ((uint64_t) (uint32_t) rec->src[j + 1] << 32);
        }
    }
    return n;
}

int32_t sa_scan(sa_state * s, struct ggml_cgraph * g) {
    const int32_t n_nodes = ggml_graph_n_nodes(g);
    s->n_recs = 0;
    s->n_nodes = n_nodes;
    s->relaid_hints = 0;
    if (table_reserve(s, 2 * n_nodes + 16) != 0 || recs_reserve(s, n_nodes + 16) != 0) {
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
    s->n_node_recs = s->n_recs;
    // Every leaf of the graph gets a record, read by a node or not: gallocr
    // allocates them all, and the host may write any of them.
    s->n_graph_leafs = g->n_leafs;
    if (sa_reserve(&s->graph_leafs, &s->cap_graph_leafs, g->n_leafs, 64, sizeof(*s->graph_leafs)) != 0) {
        return -1;
    }
    if (g->n_leafs > 0) {
        memcpy(s->graph_leafs, g->leafs, (size_t) g->n_leafs * sizeof(*g->leafs));
    }
    for (int32_t i = 0; i < g->n_leafs; i++) {
        if (rec_of(s, g->leafs[i]) < 0) {
            return -1;
        }
    }
    // Links: srcs of nodes, view_src of everything (leaves reached last).
    for (int32_t r = 0; r < s->n_recs; r++) {
        sa_rec * rec = &s->recs[r];
        struct ggml_tensor * t = rec->t;
        if (rec->node >= 0) {
            for (int j = 0; j < GGML_MAX_SRC; j++) {
                struct ggml_tensor * x = t->src[j];
                int32_t v = -1;
                if (x != NULL) {
                    // most sources are the node just before
                    v = (r > 0 && s->recs[r - 1].t == x) ? r - 1 : rec_of(s, x);
                    if (v < 0) {
                        return -1;
                    }
                    rec = &s->recs[r];
                }
                rec->src[j] = v;
                rec->srcp[j] = x;
            }
        } else {
            for (int j = 0; j < GGML_MAX_SRC; j++) {
                rec->src[j] = -1;
                rec->srcp[j] = NULL;
            }
        }
        s->recs[r].view_srcp = t->view_src;
        int32_t v = -1;
        if (t->view_src != NULL) {
            v = rec_of(s, t->view_src);
            if (v < 0) {
                return -1;
            }
        }
        s->recs[r].view_src = v;
    }
    // Kinds, strides and the key: every field a plan depends on.
    if (key_reserve(s, (int64_t) s->n_recs * SA_KEY_MAX + 2) != 0) {
        return -1;
    }
    uint64_t * k = s->key;
    *k++ = (uint64_t) (uint32_t) n_nodes | ((uint64_t) (uint32_t) s->n_recs << 32);
    for (int32_t r = 0; r < s->n_recs; r++) {
        k += rec_key(s, &s->recs[r], k);
    }
    s->n_key = (int64_t) (k - s->key);
    return s->n_recs;
}

int32_t sa_check_scan(const sa_state * s) {
    for (int32_t r = 0; r < s->n_recs; r++) {
        const sa_rec * rec = &s->recs[r];
        if (rec->view_srcp != (rec->view_src < 0 ? NULL : s->recs[rec->view_src].t)) {
            return r + 1;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const int32_t x = rec->node >= 0 ? rec->src[j] : -1;
            if (rec->srcp[j] != (x < 0 ? NULL : s->recs[x].t)) {
                return r + 1;
            }
        }
        if (!s->relaid_hints) {
            continue;
        }
        int32_t want = -1;
        if (s->n_relaid > 0) {
            const uint32_t mask = (uint32_t) s->rcap - 1;
            for (uint32_t i = sa_ptr_hash(rec->t) & mask; s->rkeys[i] != NULL; i = (i + 1) & mask) {
                if (s->rkeys[i] == rec->t) {
                    want = s->rvals[i];
                    break;
                }
            }
        }
        if (rec->relaid != want) {
            return r + 1;
        }
    }
    return 0;
}

// sa_fit_rec reports whether record r of the scanned graph fits the plan
// (see sa_fit); its kind and strides must be set.
static inline int sa_fit_rec(const sa_state * s, int32_t r, const int64_t * gdims, const sa_place * pl);
static inline int sa_same_dims(const sa_rec * rec, const int64_t * d);
static int sa_fit_pairs(const sa_state * s, const int64_t * gdims, const int32_t * pairs, int32_t n_pairs,
                        const sa_place * pl);

// sa_match_fit reports whether g is the graph of the last scan, tensor for
// tensor at the same addresses (an engine that builds each step's graph in
// the same context memory), with the topology key and, when gdims is set,
// fitting the plan (sa_fit, but for its pairs). It compares the links with
// the last scan's instead of looking every tensor up (the key's source
// words follow from them), and refreshes the records' kinds and strides.
static int sa_match_fit(sa_state * s, struct ggml_cgraph * g, const uint64_t * key, int64_t n_key, const int64_t * gdims,
                        const sa_place * pl, int * same) {
    *same = gdims != NULL;
    const int32_t n_nodes = ggml_graph_n_nodes(g);
    if (n_nodes != s->n_nodes || s->n_node_recs != n_nodes || s->n_recs == 0 || n_key < 1 ||
        key[0] != ((uint64_t) (uint32_t) n_nodes | ((uint64_t) (uint32_t) s->n_recs << 32))) {
        return 0;
    }
    sa_rec * recs = s->recs;
    for (int32_t i = 0; i < n_nodes; i++) {
        if (g->nodes[i] != recs[i].t) {
            return 0;
        }
    }
    if (g->n_leafs != s->n_graph_leafs ||
        (g->n_leafs > 0 && memcmp(g->leafs, s->graph_leafs, (size_t) g->n_leafs * sizeof(*g->leafs)) != 0)) {
        return 0;
    }
    int64_t pos = 1;
    for (int32_t r = 0; r < s->n_recs; r++) {
        sa_rec * rec = &recs[r];
        const struct ggml_tensor * t = rec->t;
        if (pos >= n_key) {
            return 0;
        }
        // The same tensors at the same addresses as the last scan: the
        // links are the same when the pointers are.
        uintptr_t diff = (uintptr_t) t->view_src ^ (uintptr_t) rec->view_srcp;
        if (rec->node >= 0) {
            for (int j = 0; j < GGML_MAX_SRC; j++) {
                diff |= (uintptr_t) t->src[j] ^ (uintptr_t) rec->srcp[j];
            }
        }
        if (diff != 0) {
            return 0;
        }
        if (rec_head(s, rec) != key[pos]) {
            return 0;
        }
        pos += rec->node >= 0 ? 1 + GGML_MAX_SRC / 2 : 1;
        if (gdims != NULL && (rec->kind == SA_OWN || rec->kind == SA_VIEW_OWN) &&
            !sa_same_dims(rec, gdims + (int64_t) r * SA_DIMS)) {
            // A record with the plan's dims fits its slot as planned;
            // another one is checked, and then so are the pairs.
            *same = 0;
            if (!sa_fit_rec(s, r, gdims, pl)) {
                return 0;
            }
        }
    }
    return pos == n_key;
}

uint64_t sa_key_hash(const uint64_t * key, int64_t n) {
    // four independent lanes, folded at the end
    uint64_t h0 = 0x243f6a8885a308d3ULL, h1 = 0x13198a2e03707344ULL, h2 = 0xa4093822299f31d0ULL, h3 = 0x082efa98ec4e6c89ULL;
    const uint64_t K = 0x9e3779b97f4a7c15ULL;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h0 = (h0 ^ key[i]) * K;
        h1 = (h1 ^ key[i + 1]) * K;
        h2 = (h2 ^ key[i + 2]) * K;
        h3 = (h3 ^ key[i + 3]) * K;
        h0 ^= h0 >> 29;
        h1 ^= h1 >> 29;
        h2 ^= h2 >> 29;
        h3 ^= h3 >> 29;
    }
    for (; i < n; i++) {
        h0 = (h0 ^ key[i]) * K;
        h0 ^= h0 >> 29;
    }
    uint64_t h = h0 ^ (h1 * 0xc2b2ae3d27d4eb4fULL) ^ (h2 * 0x165667b19e3779f9ULL) ^ (h3 * 0x27d4eb2f165667c5ULL) ^ (uint64_t) n;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
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
    s->relaid_hints = 0;
    for (int32_t r = 0; r < n; r++) {
        s->recs[r].relaid = -1;
    }
    if (count == 0) {
        s->relaid_hints = n == s->n_recs;
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
        s->recs[r].relaid = s->n_relaid;
        s->n_relaid++;
    }
    s->relaid_hints = n == s->n_recs;
    return 0;
}

int32_t sa_apply(sa_state * s, const sa_place * pl, int32_t n, int32_t n_relaid) {
    if (n != s->n_recs || s->buffer == NULL) {
        return n + 1;
    }
    char * base = (char *) ggml_backend_buffer_get_base(s->buffer);
    enum ggml_status (*init)(ggml_backend_buffer_t, struct ggml_tensor *) = s->buffer->iface.init_tensor;
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
        // ggml_backend_tensor_alloc, less its asserts: the plan fits the
        // buffer (sa_fit)
        t->buffer = s->buffer;
        t->data = base + pl[r].offset;
        if (init != NULL && init(s->buffer, t) != GGML_STATUS_SUCCESS) {
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
            // ggml_backend_view_init, its asserts as a failed placement
            ggml_backend_buffer_t vb = t->view_src->buffer;
            if (vb == NULL || t->view_src->data == NULL) {
                return r + 1;
            }
            t->buffer = vb;
            t->data = (char *) t->view_src->data + t->view_offs;
            if (vb->iface.init_tensor != NULL && vb->iface.init_tensor(vb, t) != GGML_STATUS_SUCCESS) {
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

static int32_t sa_hit_impl(sa_state * s, struct ggml_cgraph * g, const uint64_t * key, int64_t n_key, const int64_t * gdims,
                           const int32_t * pairs, int32_t n_pairs, const sa_place * pl, int32_t n, int32_t n_relaid,
                           int reset) {
    int same = 0;
    if (n == s->n_recs && sa_match_fit(s, g, key, n_key, gdims, pl, &same)) {
        if (!same && !sa_fit_pairs(s, gdims, pairs, n_pairs, pl)) {
            return 2;
        }
        if (reset) {
            ggml_backend_buffer_reset(s->buffer);
        }
        return sa_apply(s, pl, n, n_relaid) == 0 ? 1 : -1;
    }
    int32_t got = sa_scan(s, g);
    if (got < 0) {
        return -1;
    }
    if (got != n || s->n_key != n_key || memcmp(s->key, key, (size_t) n_key * sizeof(uint64_t)) != 0) {
        return 0;
    }
    if (!sa_fit(s, gdims, pairs, n_pairs, pl, n)) {
        return 2;
    }
    if (reset) {
        ggml_backend_buffer_reset(s->buffer);
    }
    return sa_apply(s, pl, n, n_relaid) == 0 ? 1 : -1;
}

int32_t sa_hit(sa_state * s, struct ggml_cgraph * g, const uint64_t * key, int64_t n_key, const int64_t * gdims,
               const int32_t * pairs, int32_t n_pairs, const sa_place * pl, int32_t n, int32_t n_relaid) {
    return sa_hit_impl(s, g, key, n_key, gdims, pairs, n_pairs, pl, n, n_relaid, 0);
}

// sa_copy sets *dst (of *cap elements) to a copy of n elements of elem
// bytes from src; it returns 0, or -1 when out of memory.
static int sa_copy(void * dst, int64_t * cap, const void * src, int64_t n, size_t elem) {
    if (sa_reserve(dst, cap, n, 16, elem) != 0) {
        return -1;
    }
    if (n > 0) {
        void * p;
        memcpy(&p, dst, sizeof p);
        memcpy(p, src, (size_t) n * elem);
    }
    return 0;
}

int32_t sa_set_last(sa_state * s, const uint64_t * key, int64_t n_key, const int64_t * gdims, const int32_t * pairs,
                    int32_t n_pairs, const sa_place * pl, int32_t n, int32_t n_relaid) {
    s->last_ok = 0;
    if (n_key <= 0) {
        return 0;
    }
    if (sa_copy(&s->last_key, &s->cap_last_key, key, n_key, sizeof(*key)) != 0 ||
        sa_copy(&s->last_dims, &s->cap_last_dims, gdims, (int64_t) n * SA_DIMS, sizeof(*gdims)) != 0 ||
        sa_copy(&s->last_pairs, &s->cap_last_pairs, pairs, 3 * (int64_t) n_pairs, sizeof(*pairs)) != 0 ||
        sa_copy(&s->last_place, &s->cap_last_place, pl, n, sizeof(*pl)) != 0) {
        return -1;
    }
    s->n_last_key = n_key;
    s->n_last_pairs = n_pairs;
    s->n_last = n;
    s->n_last_relaid = n_relaid;
    s->last_ok = 1;
    return 0;
}

int32_t sa_hit_last(sa_state * s, struct ggml_cgraph * g) {
    if (!s->last_ok || s->buffer == NULL) {
        return 0;
    }
    const int32_t r = sa_hit_impl(s, g, s->last_key, s->n_last_key, s->last_dims, s->last_pairs, s->n_last_pairs,
                                  s->last_place, s->n_last, s->n_last_relaid, 1);
    if (r == -1) {
        s->last_ok = 0; // half placed: the Go side places it again
    }
    return r;
}

// sa_alloc_size is the backend allocation size of own record r with the
// graph's own strides.
SA_INLINE int64_t sa_alloc_size(const sa_state * s, const sa_rec * rec) {
    struct ggml_tensor * t = rec->t;
    if (s->buft->iface.get_alloc_size == NULL) {
        // ggml_backend_buft_get_alloc_size's default: ggml_nbytes
        return sa_nbytes(s, t, rec->nb);
    }
    int changed = 0;
    size_t saved[GGML_MAX_DIMS];
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        saved[d] = t->nb[d];
        changed |= (int64_t) t->nb[d] != rec->nb[d];
    }
    if (changed) {
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            t->nb[d] = (size_t) rec->nb[d];
        }
    }
    const int64_t size = (int64_t) ggml_backend_buft_get_alloc_size(s->buft, t);
    if (changed) {
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            t->nb[d] = saved[d];
        }
    }
    return size;
}

void sa_dims(sa_state * s, int64_t * out) {
    memset(out, 0, (size_t) s->n_recs * SA_DIMS * sizeof(int64_t));
    for (int32_t r = 0; r < s->n_recs; r++) {
        const sa_rec * rec = &s->recs[r];
        if (rec->kind != SA_OWN && rec->kind != SA_VIEW_OWN) {
            continue;
        }
        int64_t * d = out + (int64_t) r * SA_DIMS;
        for (int k = 0; k < GGML_MAX_DIMS; k++) {
            d[k] = (int64_t) rec->t->ne[k];
            d[GGML_MAX_DIMS + k] = rec->nb[k];
        }
        d[8] = rec->view_offs;
        d[9] = rec->kind == SA_OWN ? sa_alloc_size(s, rec) : 0;
    }
}

// sa_range gives the bytes that own record r (SA_OWN or SA_VIEW_OWN, placed
// by pl) covers in the buffer, from its first element's offset *off to its
// last byte, and the strides it is placed with; it returns 0 when r is not
// placed by pl.
SA_INLINE int sa_range(const sa_state * s, const sa_place * pl, int32_t r, int64_t * off, int64_t * end, const int64_t ** nb) {
    const sa_rec * rec = &s->recs[r];
    int64_t base;
    if (rec->kind == SA_OWN) {
        base = pl[r].offset;
    } else if (rec->kind == SA_VIEW_OWN) {
        base = pl[rec->view_src].offset;
        if (base >= 0) {
            base += pl[r].relaid ? pl[r].view_offs : rec->view_offs;
        }
    } else {
        return 0;
    }
    if (base < 0) {
        return 0;
    }
    *nb = pl[r].relaid ? pl[r].nb : rec->nb;
    *off = base;
    *end = base + sa_nbytes(s, rec->t, *nb);
    return 1;
}

// sa_same_layout reports whether records a and b, placed at offsets oa and
// ob with strides na and nb, put every element at the same byte.
static inline int sa_same_layout(const sa_state * s, int32_t a, int32_t b, int64_t oa, int64_t ob, const int64_t * na,
                                 const int64_t * nb) {
    const struct ggml_tensor * x = s->recs[a].t;
    const struct ggml_tensor * y = s->recs[b].t;
    if (oa != ob || x->type != y->type) {
        return 0;
    }
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        if (x->ne[d] != y->ne[d] || (x->ne[d] > 1 && na[d] != nb[d])) {
            return 0;
        }
    }
    return 1;
}

int32_t sa_pairs(sa_state * s, const sa_place * pl, int32_t * out) {
    int32_t n = 0;
    for (int32_t k = 0; k < s->n_recs; k++) {
        const sa_rec * rec = &s->recs[k];
        int64_t uo, ue;
        const int64_t * un;
        if (rec->node < 0 || rec->kind != SA_OWN || !sa_range(s, pl, k, &uo, &ue, &un)) {
            continue;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const int32_t x = rec->src[j];
            int64_t so, se;
            const int64_t * sn;
            if (x < 0 || x == k || !sa_range(s, pl, x, &so, &se, &sn)) {
                continue;
            }
            const int32_t b = s->recs[x].kind == SA_VIEW_OWN ? s->recs[x].view_src : x;
            const int64_t bo = pl[b].offset, be = bo + sa_alloc_size(s, &s->recs[b]);
            if (be <= uo || ue <= bo) {
                continue;
            }
            if (out != NULL) {
                out[3 * n] = k;
                out[3 * n + 1] = j;
                out[3 * n + 2] = sa_same_layout(s, x, k, so, uo, sn, un) ? SA_PAIR_INPLACE : SA_PAIR_EXACT;
            }
            n++;
        }
    }
    return n;
}

// sa_same_dims reports whether record r has the dims d.
static inline int sa_same_dims(const sa_rec * rec, const int64_t * d) {
    for (int k = 0; k < GGML_MAX_DIMS; k++) {
        if ((int64_t) rec->t->ne[k] != d[k] || rec->nb[k] != d[GGML_MAX_DIMS + k]) {
            return 0;
        }
    }
    return rec->kind != SA_VIEW_OWN || rec->view_offs == d[8];
}

static inline int sa_fit_rec(const sa_state * s, int32_t r, const int64_t * gdims, const sa_place * pl) {
    const sa_rec * rec = &s->recs[r];
    const int64_t * d = gdims + (int64_t) r * SA_DIMS;
    if (rec->kind == SA_OWN) {
        if (pl[r].offset < 0) {
            return 1;
        }
        if (pl[r].relaid) {
            return sa_same_dims(rec, d);
        }
        return sa_alloc_size(s, rec) <= d[9];
    }
    if (rec->kind != SA_VIEW_OWN) {
        return 1;
    }
    const int32_t b = rec->view_src;
    if (pl[r].relaid || pl[b].relaid) {
        return sa_same_dims(rec, d);
    }
    if (!pl[b].partial) {
        // the base dies whole: the view only has to stay in its slot
        return rec->view_offs >= 0 && rec->view_offs + sa_nbytes(s, rec->t, rec->nb) <= gdims[(int64_t) b * SA_DIMS + 9];
    }
    // every element of the view is one of the planned view's, at the same byte
    if (rec->view_offs != d[8]) {
        return 0;
    }
    const struct ggml_tensor * t = rec->t;
    for (int k = 0; k < GGML_MAX_DIMS; k++) {
        const int64_t ne = (int64_t) t->ne[k];
        if (ne > d[k] || (ne > 1 && rec->nb[k] != d[GGML_MAX_DIMS + k])) {
            return 0;
        }
    }
    return 1;
}

// sa_fit_pairs checks the pairs of sa_fit.
static int sa_fit_pairs(const sa_state * s, const int64_t * gdims, const int32_t * pairs, int32_t n_pairs,
                        const sa_place * pl) {
    const sa_rec * recs = s->recs;
    for (int32_t i = 0; i < n_pairs; i++) {
        const int32_t k = pairs[3 * i], j = pairs[3 * i + 1], kind = pairs[3 * i + 2];
        const int32_t x = recs[k].src[j];
        int64_t uo, ue, so, se;
        const int64_t *un, *sn;
        if (x < 0 || !sa_range(s, pl, k, &uo, &ue, &un) || !sa_range(s, pl, x, &so, &se, &sn) || se <= uo || ue <= so) {
            continue;
        }
        if (kind == SA_PAIR_INPLACE ? !sa_same_layout(s, x, k, so, uo, sn, un)
                                    : !(sa_same_dims(&recs[x], gdims + (int64_t) x * SA_DIMS) &&
                                        sa_same_dims(&recs[k], gdims + (int64_t) k * SA_DIMS))) {
            return 0;
        }
    }
    return 1;
}

int32_t sa_fit(sa_state * s, const int64_t * gdims, const int32_t * pairs, int32_t n_pairs, const sa_place * pl,
               int32_t n) {
    if (n != s->n_recs) {
        return 0;
    }
    for (int32_t r = 0; r < n; r++) {
        if (!sa_fit_rec(s, r, gdims, pl)) {
            return 0;
        }
    }
    return sa_fit_pairs(s, gdims, pairs, n_pairs, pl);
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
