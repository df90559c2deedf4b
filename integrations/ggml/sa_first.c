// The first plan: one greedy pass over the scanned records (sa_first_plan).

#include "sa_internal.h"

// last[b] of a buffer whose bytes an in-place output took.
#define FP_DONATED (-3)

// The pass's time: 0 is the graph's start, when leaves and inputs take
// their bytes, and k + 1 the end of node record k's op, after which the
// tensors it read last give theirs back (the chains from fp_head[k + 1]).

static inline int fp_view_op(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

// fp_base returns record r's base: itself, or the base of its view_src.
static inline int32_t fp_base(const sa_state * s, int32_t r) {
    while (s->recs[r].view_src >= 0) {
        r = s->recs[r].view_src;
    }
    return r;
}

// fp_placed reports whether rec gets an offset: an own tensor that is not
// a view.
static inline int fp_placed(const sa_rec * rec) {
    return rec->kind == SA_OWN && rec->view_src < 0 && !fp_view_op(rec->t->op);
}

// fp_starts reports whether rec takes its bytes at the graph's start: a
// leaf or an input.
static inline int fp_starts(const sa_rec * rec) {
    return rec->node < 0 || (rec->t->flags & GGML_TENSOR_FLAG_INPUT) != 0;
}

static inline int64_t fp_nelements(const struct ggml_tensor * t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

// fp_size is the bytes rec takes, as the planner's trace sizes it.
static inline int64_t fp_size(const sa_state * s, const sa_rec * rec) {
    int64_t n = rec->alloc_size > 0 ? rec->alloc_size : sa_nbytes(s, rec->t, rec->nb);
    return n > 0 ? n : 1;
}

// The free blocks: sorted by offset, disjoint, never adjacent.

static int fl_insert(sa_state * s, int64_t at, int64_t off, int64_t size) {
    if (sa_reserve(&s->fl_off, &s->cap_fl, s->n_fl + 1, 64, sizeof(int64_t)) != 0) {
        return -1;
    }
    int64_t cap = s->cap_fl - 1; // fl_size follows fl_off's capacity
    if (sa_reserve(&s->fl_size, &cap, s->cap_fl, 64, sizeof(int64_t)) != 0) {
        return -1;
    }
    memmove(&s->fl_off[at + 1], &s->fl_off[at], (size_t) (s->n_fl - at) * sizeof(int64_t));
    memmove(&s->fl_size[at + 1], &s->fl_size[at], (size_t) (s->n_fl - at) * sizeof(int64_t));
    s->fl_off[at] = off;
    s->fl_size[at] = size;
    s->n_fl++;
    return 0;
}

static void fl_remove(sa_state * s, int64_t at) {
    memmove(&s->fl_off[at], &s->fl_off[at + 1], (size_t) (s->n_fl - at - 1) * sizeof(int64_t));
    memmove(&s->fl_size[at], &s->fl_size[at + 1], (size_t) (s->n_fl - at - 1) * sizeof(int64_t));
    s->n_fl--;
}

// fl_free returns [off, off+size) to the free blocks, merged with its
// neighbours.
static int fl_free(sa_state * s, int64_t off, int64_t size) {
    int64_t at = 0;
    while (at < s->n_fl && s->fl_off[at] < off) {
        at++;
    }
    const int prev = at > 0 && s->fl_off[at - 1] + s->fl_size[at - 1] == off;
    const int next = at < s->n_fl && off + size == s->fl_off[at];
    if (prev && next) {
        s->fl_size[at - 1] += size + s->fl_size[at];
        fl_remove(s, at);
    } else if (prev) {
        s->fl_size[at - 1] += size;
    } else if (next) {
        s->fl_off[at] = off;
        s->fl_size[at] += size;
    } else {
        return fl_insert(s, at, off, size);
    }
    return 0;
}

// fl_alloc takes size bytes from the smallest free block that holds them
// (the lowest among equals), or from the top, extending a free block that
// ends there; it returns their offset.
static int64_t fl_alloc(sa_state * s, int64_t size, int64_t * top) {
    int64_t best = -1;
    for (int64_t i = 0; i < s->n_fl; i++) {
        if (s->fl_size[i] >= size && (best < 0 || s->fl_size[i] < s->fl_size[best])) {
            best = i;
        }
    }
    if (best >= 0) {
        const int64_t off = s->fl_off[best];
        s->fl_off[best] += size;
        s->fl_size[best] -= size;
        if (s->fl_size[best] == 0) {
            fl_remove(s, best);
        }
        return off;
    }
    if (s->n_fl > 0 && s->fl_off[s->n_fl - 1] + s->fl_size[s->n_fl - 1] == *top) {
        const int64_t off = s->fl_off[s->n_fl - 1];
        fl_remove(s, s->n_fl - 1);
        *top = off + size;
        return off;
    }
    const int64_t off = *top;
    *top += size;
    return off;
}

// fp_same_layout_sources is the trace's in-place rule for node record k
// beyond ggml's list: every source with an own base and the output's
// element count and type size has the output's type and ne.
static int fp_same_layout_sources(const sa_state * s, int32_t k) {
    const struct ggml_tensor * o = s->recs[k].t;
    const int64_t n = fp_nelements(o);
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const int32_t x = s->recs[k].src[j];
        if (x < 0) {
            continue;
        }
        const sa_rec * rec = &s->recs[x];
        const struct ggml_tensor * t = rec->t;
        if ((rec->kind != SA_OWN && rec->kind != SA_VIEW_OWN) || s->tsize[t->type] != s->tsize[o->type] ||
            fp_nelements(t) != n) {
            continue;
        }
        if (t->type != o->type) {
            return 0;
        }
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            if (t->ne[d] != o->ne[d]) {
                return 0;
            }
        }
    }
    return 1;
}

// fp_donor returns the source node record k writes its output over, or -1.
static int32_t fp_donor(const sa_state * s, int32_t k, const int32_t * last, const sa_place * pl) {
    const sa_rec * out = &s->recs[k];
    const struct ggml_tensor * o = out->t;
    if (!ggml_op_can_inplace(o->op) || !fp_same_layout_sources(s, k)) {
        return -1;
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const int32_t x = out->src[j];
        if (x < 0 || x == k) {
            continue;
        }
        const sa_rec * rec = &s->recs[x];
        const struct ggml_tensor * t = rec->t;
        // dies at the op (an output never does), placed, and as the output
        if (last[x] != k || !fp_placed(rec) || pl[x].offset < 0 || t->type != o->type ||
            fp_size(s, out) > fp_size(s, rec)) {
            continue;
        }
        int same = 1;
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            same &= t->ne[d] == o->ne[d] && rec->nb[d] == out->nb[d];
        }
        // read once: no other source is it or a view of it
        for (int i = 0; i < GGML_MAX_SRC && same; i++) {
            if (i != j && out->src[i] >= 0 && fp_base(s, out->src[i]) == x) {
                same = 0;
            }
        }
        if (same) {
            return x;
        }
    }
    return -1;
}

static inline int64_t fp_max(int64_t a, int64_t b) { return a > b ? a : b; }

// fp_slot is the bytes record r's block takes: its size, aligned up.
static inline int64_t fp_slot(const sa_state * s, int32_t r, int64_t align) {
    return (fp_size(s, &s->recs[r]) + align - 1) / align * align;
}

// fp_release frees the blocks of the chain from b (fp_next) but those an
// in-place output took; it returns 0, or -1 when out of memory.
static int fp_release(sa_state * s, int32_t b, const sa_place * pl, int64_t align) {
    for (; b >= 0; b = s->fp_next[b]) {
        if (s->fp_last[b] != FP_DONATED && fl_free(s, pl[b].offset, fp_slot(s, b, align)) != 0) {
            return -1;
        }
    }
    return 0;
}

int64_t sa_first_plan(sa_state * s, sa_place * pl, int64_t align, int32_t inplace) {
    const int32_t n = s->n_recs, nodes = s->n_node_recs;
    if (align < 1) {
        align = 1;
    }
    sa_sizes(s);
    if (sa_reserve(&s->fp_last, &s->cap_fp, n, 64, sizeof(int32_t)) != 0) {
        return -1;
    }
    int64_t cap = s->cap_fp - 1; // fp_next follows fp_last's capacity
    if (sa_reserve(&s->fp_next, &cap, s->cap_fp, 64, sizeof(int32_t)) != 0 ||
        sa_reserve(&s->fp_head, &s->cap_fp_head, (int64_t) nodes + 1, 64, sizeof(int32_t)) != 0) {
        return -1;
    }
    int32_t * last = s->fp_last; // per base: the last op using it; -2 when held to the end
    int32_t * next = s->fp_next; // release chains, from head[time]
    int32_t * head = s->fp_head;
    s->n_fl = 0;
    int32_t prelude = 0; // the time unread leaves and inputs die
    for (int32_t r = 0; r < n; r++) {
        last[r] = -1;
        pl[r] = (sa_place) {.offset = -1};
        const sa_rec * rec = &s->recs[r];
        if (rec->view_src < 0 && fp_view_op(rec->t->op)) {
            return -2; // a view of nothing: the trace reader refuses it too
        }
        if (rec->node >= 0 && (rec->t->flags & GGML_TENSOR_FLAG_INPUT)) {
            prelude = r + 1;
        }
    }
    for (int32_t k = 0; k < nodes; k++) {
        const sa_rec * rec = &s->recs[k];
        if (fp_view_op(rec->t->op)) {
            continue;
        }
        last[fp_base(s, k)] = k;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (rec->src[j] >= 0) {
                last[fp_base(s, rec->src[j])] = k;
            }
        }
    }
    for (int32_t r = 0; r < n; r++) {
        if (s->recs[r].t->flags & GGML_TENSOR_FLAG_OUTPUT) {
            last[fp_base(s, r)] = -2;
        }
    }
    for (int32_t t = 0; t <= nodes; t++) {
        head[t] = -1;
    }
    for (int32_t r = n - 1; r >= 0; r--) {
        if (!fp_placed(&s->recs[r]) || last[r] == -2) {
            continue;
        }
        const int32_t t = last[r] >= 0 ? last[r] + 1 : (fp_starts(&s->recs[r]) ? prelude : r + 1);
        next[r] = head[t];
        head[t] = r;
    }
    int64_t top = 0, height = 0;
    for (int32_t r = 0; r < n; r++) {
        const sa_rec * rec = &s->recs[r];
        if (fp_placed(rec) && fp_starts(rec)) {
            pl[r].offset = fl_alloc(s, fp_slot(s, r, align), &top);
            height = fp_max(height, pl[r].offset + fp_size(s, rec));
        }
    }
    if (fp_release(s, head[0], pl, align) != 0) {
        return -1;
    }
    for (int32_t k = 0; k < nodes; k++) {
        const sa_rec * rec = &s->recs[k];
        if (fp_placed(rec) && !fp_starts(rec)) {
            const int32_t d = inplace ? fp_donor(s, k, last, pl) : -1;
            if (d >= 0 && fp_slot(s, d, align) == fp_slot(s, k, align)) {
                pl[k].offset = pl[d].offset;
                last[d] = FP_DONATED; // its bytes are the output's now
            } else {
                pl[k].offset = fl_alloc(s, fp_slot(s, k, align), &top);
            }
            height = fp_max(height, pl[k].offset + fp_size(s, rec));
        }
        if (fp_release(s, head[k + 1], pl, align) != 0) {
            return -1;
        }
    }
    return height;
}
