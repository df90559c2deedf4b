// The first plan: one greedy pass over the scanned records (sa_first_plan).

#include "sa_internal.h"

// The last op of a buffer whose bytes an in-place output took.
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

// A record's pass state: the last op using it (FP_HELD, FP_DONATED, or
// -1 for none) and the next record of its release chain.
struct sa_fp_rec {
    int32_t last, next;
};

#define FP_HELD (-2) // an output, or viewed by one: never released

// A free block. The free blocks are sorted by offset, disjoint and never
// adjacent.
struct sa_block {
    int64_t off, size;
};

static int fl_insert(sa_state * s, int64_t at, int64_t off, int64_t size) {
    if (sa_reserve(&s->fl, &s->cap_fl, s->n_fl + 1, 64, sizeof(struct sa_block)) != 0) {
        return -1;
    }
    memmove(&s->fl[at + 1], &s->fl[at], (size_t) (s->n_fl - at) * sizeof(struct sa_block));
    s->fl[at] = (struct sa_block) {off, size};
    s->n_fl++;
    return 0;
}

static void fl_remove(sa_state * s, int64_t at) {
    memmove(&s->fl[at], &s->fl[at + 1], (size_t) (s->n_fl - at - 1) * sizeof(struct sa_block));
    s->n_fl--;
}

// fl_free returns [off, off+size) to the free blocks, merged with its
// neighbours.
static int fl_free(sa_state * s, int64_t off, int64_t size) {
    struct sa_block * fl = s->fl;
    int64_t at = 0;
    while (at < s->n_fl && fl[at].off < off) {
        at++;
    }
    const int prev = at > 0 && fl[at - 1].off + fl[at - 1].size == off;
    const int next = at < s->n_fl && off + size == fl[at].off;
    if (prev && next) {
        fl[at - 1].size += size + fl[at].size;
        fl_remove(s, at);
    } else if (prev) {
        fl[at - 1].size += size;
    } else if (next) {
        fl[at].off = off;
        fl[at].size += size;
    } else {
        return fl_insert(s, at, off, size);
    }
    return 0;
}

// fl_alloc takes size bytes from the smallest free block that holds them
// (the lowest among equals), or from the top, extending a free block that
// ends there; it returns their offset.
static int64_t fl_alloc(sa_state * s, int64_t size, int64_t * top) {
    struct sa_block * fl = s->fl;
    int64_t best = -1;
    for (int64_t i = 0; i < s->n_fl; i++) {
        if (fl[i].size >= size && (best < 0 || fl[i].size < fl[best].size)) {
            best = i;
        }
    }
    if (best >= 0) {
        const int64_t off = fl[best].off;
        fl[best].off += size;
        fl[best].size -= size;
        if (fl[best].size == 0) {
            fl_remove(s, best);
        }
        return off;
    }
    if (s->n_fl > 0 && fl[s->n_fl - 1].off + fl[s->n_fl - 1].size == *top) {
        const int64_t off = fl[s->n_fl - 1].off;
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

static inline int64_t fp_max(int64_t a, int64_t b) { return a > b ? a : b; }

// fp_slot is the bytes record r's block takes: its size, aligned up.
static inline int64_t fp_slot(const sa_state * s, int32_t r, int64_t align) {
    return (fp_size(s, &s->recs[r]) + align - 1) / align * align;
}

// fp_donor returns the source node record k writes its output over, or -1:
// one that dies at the op (an output never does), is placed, is read once
// by the op (no other source is it or a view of it), and has the output's
// type, ne, strides and slot.
static int32_t fp_donor(const sa_state * s, int32_t k, const sa_place * pl, int64_t align) {
    const sa_rec * out = &s->recs[k];
    const struct ggml_tensor * o = out->t;
    if (!ggml_op_can_inplace(o->op) || !fp_same_layout_sources(s, k)) {
        return -1;
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const int32_t x = out->src[j];
        if (x < 0 || x == k || s->fp[x].last != k || !fp_placed(&s->recs[x])) {
            continue;
        }
        const sa_rec * rec = &s->recs[x];
        int same = rec->t->type == o->type && fp_slot(s, x, align) == fp_slot(s, k, align);
        for (int d = 0; d < GGML_MAX_DIMS && same; d++) {
            same = rec->t->ne[d] == o->ne[d] && rec->nb[d] == out->nb[d];
        }
        for (int i = 0; i < GGML_MAX_SRC && same; i++) {
            same = i == j || out->src[i] < 0 || fp_base(s, out->src[i]) != x;
        }
        if (same) {
            return x;
        }
    }
    return -1;
}

// fp_release frees the blocks of the chain from b but those an in-place
// output took; it returns 0, or -1 when out of memory.
static int fp_release(sa_state * s, int32_t b, const sa_place * pl, int64_t align) {
    for (; b >= 0; b = s->fp[b].next) {
        if (s->fp[b].last != FP_DONATED && fl_free(s, pl[b].offset, fp_slot(s, b, align)) != 0) {
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
    if (sa_reserve(&s->fp, &s->cap_fp, n, 64, sizeof(struct sa_fp_rec)) != 0 ||
        sa_reserve(&s->fp_head, &s->cap_fp_head, (int64_t) nodes + 1, 64, sizeof(int32_t)) != 0) {
        return -1;
    }
    struct sa_fp_rec * fp = s->fp;
    int32_t * head = s->fp_head;
    s->n_fl = 0;
    int32_t prelude = 0; // the time unread leaves and inputs die
    for (int32_t r = 0; r < n; r++) {
        fp[r] = (struct sa_fp_rec) {-1, -1};
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
        fp[fp_base(s, k)].last = k;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (rec->src[j] >= 0) {
                fp[fp_base(s, rec->src[j])].last = k;
            }
        }
    }
    for (int32_t r = 0; r < n; r++) {
        if (s->recs[r].t->flags & GGML_TENSOR_FLAG_OUTPUT) {
            fp[fp_base(s, r)].last = FP_HELD;
        }
    }
    for (int32_t t = 0; t <= nodes; t++) {
        head[t] = -1;
    }
    for (int32_t r = n - 1; r >= 0; r--) {
        if (!fp_placed(&s->recs[r]) || fp[r].last == FP_HELD) {
            continue;
        }
        const int32_t t = fp[r].last >= 0 ? fp[r].last + 1 : (fp_starts(&s->recs[r]) ? prelude : r + 1);
        fp[r].next = head[t];
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
            const int32_t d = inplace ? fp_donor(s, k, pl, align) : -1;
            if (d >= 0) {
                pl[k].offset = pl[d].offset;
                fp[d].last = FP_DONATED; // its bytes are the output's now
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
