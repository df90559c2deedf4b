// C side of the subarena ggml integration: one pass over a graph that lists
// its tensors (nodes, then the leaves they reach) and hashes what a plan
// depends on, and the placement of a planned graph into a backend buffer.
// Both run in one cgo call each, so a plan-cache hit costs two.

#ifndef SA_GGML_H
#define SA_GGML_H

#include <stdint.h>
#include <stddef.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

// ggml exports it without a prototype.
bool ggml_op_can_inplace(enum ggml_op op);

// Record kinds.
enum {
    SA_OWN      = 0, // a tensor the allocator places (no data, no buffer, or in the allocator's buffer)
    SA_EXT      = 1, // a tensor with data or a buffer of its own: weights, KV cache
    SA_VIEW_OWN = 2, // a view whose base is SA_OWN
    SA_VIEW_EXT = 3, // a view whose base is SA_EXT
};

// One tensor of a scanned graph. Records are in scan order: the graph's
// nodes in execution order, then the graph's leaves, then every other
// tensor a node reaches through src or view_src, in the order first
// reached.
typedef struct sa_rec {
    struct ggml_tensor * t;
    int32_t kind;
    int32_t node;                 // index in the graph's nodes, -1 for a leaf
    int32_t view_src;             // record index of view_src, -1 if none
    int32_t src[GGML_MAX_SRC];    // record index of src[j], -1 if none
    struct ggml_tensor * srcp[GGML_MAX_SRC]; // t->src as scanned (a node's; NULL for a leaf)
    struct ggml_tensor * view_srcp;          // t->view_src as scanned
    int32_t relaid;               // its entry in relaid, or -1 (valid while relaid_hints)
    int32_t pad;
    int64_t nb[GGML_MAX_DIMS];    // the tensor's strides as the graph built them
    int64_t view_offs;            // and its view offset (before any relayout)
    int64_t alloc_size;           // backend allocation size (SA_OWN only)
} sa_rec;

// A tensor whose strides (and view offset) the last placement changed: an
// own tensor laid over a strided footprint of another, or a view of one.
typedef struct sa_relaid {
    struct ggml_tensor * t;
    int64_t orig_nb[GGML_MAX_DIMS];
    int64_t orig_offs;
    int64_t new_nb[GGML_MAX_DIMS];
    int64_t new_offs;
} sa_relaid;

struct sa_place;

typedef struct sa_state {
    ggml_backend_buffer_type_t buft;
    ggml_backend_buffer_t buffer;   // the allocator's buffer, or NULL
    sa_rec * recs;
    int32_t n_recs, n_nodes, n_node_recs;
    int32_t n_graph_leafs;          // the graph's leaf count
    int64_t cap_recs;
    // pointer -> record index, open addressing, cap a power of two
    struct ggml_tensor ** keys;
    int32_t * vals;
    int32_t hcap;
    // relaid tensors of the last placement, and their lookup table
    sa_relaid * relaid;
    int32_t n_relaid, cap_relaid;
    int32_t relaid_hints;           // recs[].relaid indexes relaid: set by the last placement, since the last scan
    struct ggml_tensor ** rkeys;
    int32_t * rvals;
    int32_t rcap;
    // the scanned graph's structural key: every field a plan depends on
    uint64_t * key;
    int64_t n_key, cap_key;
    // tensors another allocator places (sa_exclude): external here
    struct ggml_tensor ** xkeys;
    int32_t xcap, n_excluded;
    // the graph's leaves as last scanned
    struct ggml_tensor ** graph_leafs;
    int64_t cap_graph_leafs;
    // block and type sizes of ggml's types
    int64_t blck[GGML_TYPE_COUNT], tsize[GGML_TYPE_COUNT];
    // the plan placed last, for sa_hit_last (copies; valid when last_ok)
    uint64_t * last_key;
    int64_t * last_dims;
    int32_t * last_pairs;
    struct sa_place * last_place;
    int64_t n_last_key, cap_last_key, cap_last_dims, cap_last_pairs, cap_last_place;
    int32_t n_last_pairs, n_last, n_last_relaid, last_ok;
    // sa_first_plan's scratch: per record, the last op using it and its
    // release chain; the chains' heads by time; the free blocks, by offset
    struct sa_fp_rec * fp;
    int32_t * fp_head;
    int64_t cap_fp, cap_fp_head;
    struct sa_block * fl;
    int64_t n_fl, cap_fl;
} sa_state;

sa_state * sa_state_new(ggml_backend_buffer_type_t buft);
void sa_state_free(sa_state * s);

// sa_exclude makes the n tensors ts external to s (kind SA_EXT, their
// views SA_VIEW_EXT) in the scans that follow, until the next call; n = 0
// clears the set. It returns 0, or -1 when out of memory (the set is then
// empty).
int32_t sa_exclude(sa_state * s, struct ggml_tensor * const * ts, int32_t n);

// sa_scan lists the graph's tensors into s->recs and their structure into
// s->key; it returns the number of records, or -1 when out of memory.
int32_t sa_scan(sa_state * s, struct ggml_cgraph * g);

// sa_check_scan checks what the hit path trusts of the last scan and
// placement: each record's srcp and view_srcp are the tensors its src and
// view_src records hold, and, while relaid_hints, each record's relaid hint
// names the entry of the relaid table for its tensor, or -1 when the table
// has none. It returns 0, or 1 + the index of the first record that breaks
// it.
int32_t sa_check_scan(const sa_state * s);

// sa_sizes sets alloc_size of the scanned own records.
int32_t sa_sizes(sa_state * s);

// One placement instruction per record (in scan order).
typedef struct sa_place sa_place;
struct sa_place {
    int64_t offset;               // SA_OWN: byte offset in the buffer, -1 = leave alone
    int64_t nb[GGML_MAX_DIMS];    // SA_OWN, SA_VIEW_OWN: strides to set when relaid
    int64_t view_offs;            // SA_VIEW_OWN: view offset to set when relaid
    int32_t relaid;               // 1 when nb (and view_offs) replace the graph's own
    int32_t partial;              // SA_OWN: the plan shares the slot with a tensor live while part of it is
};

// sa_apply places the scanned graph: own tensors at base+offset with
// ggml_backend_tensor_alloc, views with ggml_backend_view_init; n_relaid
// counts the instructions with relaid set. It returns 0, or the index+1 of
// the record it could not place.
int32_t sa_apply(sa_state * s, const sa_place * pl, int32_t n, int32_t n_relaid);

// sa_key_hash hashes a key, for looking plans up.
uint64_t sa_key_hash(const uint64_t * key, int64_t n);

// Dims: SA_DIMS words per record of an own tensor or view (zero for the
// others): ne[4], the graph's nb[4], the view offset, and the backend
// allocation size (SA_OWN).
#define SA_DIMS 10

// sa_dims writes the scanned graph's dims to out (SA_DIMS * n_recs words).
void sa_dims(sa_state * s, int64_t * out);

// Pair kinds (sa_pairs).
enum {
    SA_PAIR_INPLACE = 1, // the source lies element for element under the output
    SA_PAIR_EXACT   = 2, // any other: both must keep their planned dims where their bytes meet
};

// sa_pairs lists, as (node record, source slot, kind) triples, each source
// of a node writing an own tensor whose base's slot, as pl places the
// scanned graph, meets the node's output's bytes: the in-place pairs of
// the plan and every source whose bytes could become one in a smaller
// graph. It
// returns their number, writing them to out unless out is NULL.
int32_t sa_pairs(sa_state * s, const sa_place * pl, int32_t * out);

// sa_fit reports whether the scanned graph, which has the topology of the
// graph planned with dims gdims, pairs and placement pl, can be placed with
// pl: every own tensor no larger than its slot, every view of one covering
// a subset of the planned view's bytes with the same strides, relaid
// tensors and their views as planned (as are the views of a tensor whose
// slot the plan shares while part of it is live: pl's partial), the other
// views within their base's slot, and every in-place pair still
// element for element (SA_PAIR_INPLACE) or as planned (SA_PAIR_EXACT).
int32_t sa_fit(sa_state * s, const int64_t * gdims, const int32_t * pairs, int32_t n_pairs, const sa_place * pl,
               int32_t n);

// sa_hit scans g and, when it has topology key and fits the plan (sa_fit),
// places it with pl; it returns 1 on a hit, 0 when the topology differs, 2
// when it does not fit (the scan is then in s), -1 on error.
int32_t sa_hit(sa_state * s, struct ggml_cgraph * g, const uint64_t * key, int64_t n_key, const int64_t * gdims,
               const int32_t * pairs, int32_t n_pairs, const sa_place * pl, int32_t n, int32_t n_relaid);

// sa_set_last keeps a copy of a plan (as sa_hit takes it) for sa_hit_last;
// n_key = 0 forgets it. It returns 0, or -1 when out of memory (nothing is
// kept then).
int32_t sa_set_last(sa_state * s, const uint64_t * key, int64_t n_key, const int64_t * gdims, const int32_t * pairs,
                    int32_t n_pairs, const sa_place * pl, int32_t n, int32_t n_relaid);

// sa_hit_last is sa_hit with the plan kept by sa_set_last, resetting the
// buffer (ggml_backend_buffer_reset, as gallocr does) before it places the
// graph: a C host's whole plan-cache hit, with no call into Go. It returns
// 0 when no plan is kept or the buffer is not allocated.
int32_t sa_hit_last(sa_state * s, struct ggml_cgraph * g);

// sa_first_plan places the scanned graph in one greedy pass, as
// ggml_gallocr_reserve does, and writes one instruction per record to pl
// (n_recs of them): every own tensor that is not a view gets an offset, a
// multiple of align, and keeps its bytes from the op that writes it (the
// graph's start for leaves and inputs) to the last op that reads it or a
// view of it (the end for outputs and what an output views; an own leaf no
// op reads dies after the inputs), the liveness the planner's trace of the
// same graph has. A freed block goes to the smallest free block it fits,
// or to the top. With inplace set, an op on ggml's in-place list
// (ggml_op_can_inplace) whose own sources of its output's element count and
// size all have its type and ne (the rule the trace marks in-place ops
// with) writes its output over a source that dies at it, is an own tensor
// (no view) read once by the op, and has the output's type, ne and strides:
// element for element. Nothing is relaid or partial. It returns the plan's
// height (the largest offset + allocation size), -1 when out of memory, or
// -2 when a view has no view_src.
int64_t sa_first_plan(sa_state * s, sa_place * pl, int64_t align, int32_t inplace);

// The arena: page-aligned anonymous memory, never the Go heap.
void * sa_arena_alloc(size_t size);
void sa_arena_free(void * p, size_t size);

#endif
