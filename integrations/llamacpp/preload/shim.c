//go:build subarena_extggml

// The C face of libsubarena-ggml.so: every function of ggml-alloc.h's
// gallocr API, and sigaction/signal.
//
// A handle this library made (struct sa_galloc, kept in a list) is served
// by the Go side (preload.go) or, once that side has given it up, by a real
// gallocr made for it. Any other handle is a real gallocr's — made here for
// a fallback, or by ggml itself, whose gallocr calls its own functions
// through the PLT and so reaches these — and is forwarded to ggml's own
// function, found with dlsym(RTLD_NEXT), or, where the host loaded ggml
// outside the global scope, in the library of the caller.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim.h"
#include "_cgo_export.h"
#include "ggml-impl.h" // struct ggml_cgraph: the leaves, for the shadow without unread leaves

typedef ggml_gallocr_t (*new_n_fn)(ggml_backend_buffer_type_t *, int);
typedef void (*free_fn)(ggml_gallocr_t);
typedef bool (*reserve_fn)(ggml_gallocr_t, struct ggml_cgraph *);
typedef bool (*reserve_n_fn)(ggml_gallocr_t, struct ggml_cgraph *, const int *, const int *);
typedef void (*reserve_n_size_fn)(ggml_gallocr_t, struct ggml_cgraph *, const int *, const int *, size_t *);
typedef bool (*alloc_graph_fn)(ggml_gallocr_t, struct ggml_cgraph *);
typedef size_t (*get_buffer_size_fn)(ggml_gallocr_t, int);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

// ggml's own gallocr, resolved once.
static struct {
    new_n_fn new_n;
    free_fn free;
    reserve_fn reserve;
    reserve_n_fn reserve_n;
    reserve_n_size_fn reserve_n_size;
    alloc_graph_fn alloc_graph;
    get_buffer_size_fn get_buffer_size;
    int ok;
} real;

static pthread_mutex_t sa_lock = PTHREAD_MUTEX_INITIALIZER;
// SUBARENA_GGML: off forwards everything; gallocr serves every allocator
// with ggml's gallocr but counts and times its calls like subarena's (the
// baseline of the stats); anything else plans with subarena.
enum { SA_OFF = 0, SA_ON = 1, SA_BASELINE = 2 };
static int sa_mode = -1;
static int sa_stats; // SUBARENA_GGML_STATS is set

// The allocator whose alloc_graph this thread is in, and whether ggml's
// gallocr re-reserved inside it (its calls come back through the PLT).
static __thread struct sa_galloc * sa_in_alloc;
static __thread int sa_reserved_inside;

// One allocator of this library's.
struct sa_galloc {
    int64_t id;                        // the Go side's
    ggml_gallocr_t real;               // the real gallocr serving it after a fallback
    ggml_gallocr_t shadow;             // a real gallocr sizing the same graphs (stats only)
    ggml_gallocr_t shadow_read;        // the same, the leaves no node reads left out (stats only)
    int n_bufs;
    ggml_backend_buffer_type_t * bufts;
    void * hit_state;                  // the Go side's sa_state for sa_hit_last, or NULL
    struct sa_galloc * next;
};

// integrations/ggml's whole plan-cache hit in C (sa_ggml.h).
int32_t sa_hit_last(void * s, struct ggml_cgraph * g);

static struct sa_galloc * sa_list;

static void * sa_resolve(const char * name, void * caller) {
    void * f = dlsym(RTLD_NEXT, name);
    if (f == NULL && caller != NULL) {
        // ggml loaded with RTLD_LOCAL (a plugin host): look in the caller's library.
        Dl_info info;
        if (dladdr(caller, &info) != 0 && info.dli_fname != NULL) {
            void * h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
            if (h != NULL) {
                f = dlsym(h, name);
            }
        }
    }
    return f;
}

static int sa_real(void * caller) {
    pthread_mutex_lock(&sa_lock);
    if (!real.ok) {
        real.new_n = (new_n_fn) sa_resolve("ggml_gallocr_new_n", caller);
        real.free = (free_fn) sa_resolve("ggml_gallocr_free", caller);
        real.reserve = (reserve_fn) sa_resolve("ggml_gallocr_reserve", caller);
        real.reserve_n = (reserve_n_fn) sa_resolve("ggml_gallocr_reserve_n", caller);
        real.reserve_n_size = (reserve_n_size_fn) sa_resolve("ggml_gallocr_reserve_n_size", caller);
        real.alloc_graph = (alloc_graph_fn) sa_resolve("ggml_gallocr_alloc_graph", caller);
        real.get_buffer_size = (get_buffer_size_fn) sa_resolve("ggml_gallocr_get_buffer_size", caller);
        real.ok = real.new_n && real.free && real.reserve && real.reserve_n && real.reserve_n_size &&
                  real.alloc_graph && real.get_buffer_size;
    }
    int ok = real.ok;
    pthread_mutex_unlock(&sa_lock);
    if (!ok) {
        fprintf(stderr, "subarena-ggml: ggml's own gallocr is not in this process; cannot go on\n");
        abort();
    }
    return ok;
}

#define SA_CALLER __builtin_return_address(0)

static int sa_on(void) {
    if (sa_mode < 0) {
        const char * v = getenv("SUBARENA_GGML");
        sa_mode = SA_ON;
        if (v != NULL && (strcmp(v, "off") == 0 || strcmp(v, "0") == 0)) {
            sa_mode = SA_OFF;
        } else if (v != NULL && strcmp(v, "gallocr") == 0) {
            sa_mode = SA_BASELINE;
        }
        const char * st = getenv("SUBARENA_GGML_STATS");
        sa_stats = st != NULL && st[0] != 0;
    }
    return sa_mode;
}

// sa_find returns the allocator of handle h, or NULL for a real gallocr's.
static struct sa_galloc * sa_find(ggml_gallocr_t h) {
    pthread_mutex_lock(&sa_lock);
    struct sa_galloc * g = sa_list;
    while (g != NULL && (ggml_gallocr_t) g != h) {
        g = g->next;
    }
    pthread_mutex_unlock(&sa_lock);
    return g;
}

static int64_t sa_thread_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// sa_fall_back moves g to a real gallocr for good.
static void sa_fall_back(struct sa_galloc * g) {
    if (g->real == NULL) {
        g->real = real.new_n(g->bufts, g->n_bufs);
    }
    saGiveUp(g->id);
}

// sa_note counts a call of kind on g and the thread CPU time since t0 (stats only).
static inline void sa_note(struct sa_galloc * g, int kind, int64_t t0, int hit) {
    if (sa_stats) {
        saNote(g->id, kind, sa_thread_ns() - t0, g->real != NULL, hit);
    }
}

// sa_report_real_sizes hands the sizes of g's real gallocr to the stats.
static void sa_report_real_sizes(struct sa_galloc * g) {
    if (g->real == NULL || g->n_bufs > SA_MAX_BUFS) {
        return;
    }
    size_t sizes[SA_MAX_BUFS] = {0};
    for (int i = 0; i < g->n_bufs; i++) {
        sizes[i] = real.get_buffer_size(g->real, i);
    }
    saRealSizes(g->id, sizes, g->n_bufs);
}

// sa_ggml_visible reports whether ggml's symbols resolve in the global
// scope, as the Go side's calls into ggml need: not so when the host
// dlopened ggml with RTLD_LOCAL (a plugin), and then every allocator is
// ggml's own.
static int sa_ggml_visible(void) {
    static int visible = -1;
    if (visible < 0) {
        // ggml_version: a ggml too old to have it is not the one built for
        visible = dlsym(RTLD_DEFAULT, "ggml_op_name") != NULL && dlsym(RTLD_DEFAULT, "ggml_backend_buft_name") != NULL &&
                  dlsym(RTLD_DEFAULT, "ggml_version") != NULL;
        if (!visible) {
            fprintf(stderr, "subarena-ggml: ggml is not in the process's global scope (loaded with RTLD_LOCAL?) "
                            "or too old; ggml's gallocr serves every allocator\n");
        }
    }
    return visible;
}

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs) {
    sa_real(SA_CALLER);
    if (!sa_on() || !sa_ggml_visible()) {
        return real.new_n(bufts, n_bufs);
    }
    struct sa_galloc * g = (struct sa_galloc *) calloc(1, sizeof(*g));
    ggml_backend_buffer_type_t * copy = (ggml_backend_buffer_type_t *) calloc((size_t) (n_bufs > 0 ? n_bufs : 1), sizeof(*copy));
    if (g == NULL || copy == NULL) {
        free(g);
        free(copy);
        return real.new_n(bufts, n_bufs);
    }
    memcpy(copy, bufts, (size_t) n_bufs * sizeof(*copy));
    g->bufts = copy;
    g->n_bufs = n_bufs;
    int supported = 0;
    g->id = saNew((void *) copy, n_bufs, sa_mode == SA_BASELINE, &supported);
    if (!supported) {
        // the Go side said why on stderr; a real gallocr serves this one
        g->real = real.new_n(bufts, n_bufs);
    } else {
        g->hit_state = saHitState(g->id);
    }
    if (sa_stats) {
        g->shadow = real.new_n(bufts, n_bufs);
        g->shadow_read = real.new_n(bufts, n_bufs);
    }
    pthread_mutex_lock(&sa_lock);
    g->next = sa_list;
    sa_list = g;
    pthread_mutex_unlock(&sa_lock);
    return (ggml_gallocr_t) g;
}

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) {
    return ggml_gallocr_new_n(&buft, 1);
}

void ggml_gallocr_free(ggml_gallocr_t galloc) {
    if (galloc == NULL) {
        return;
    }
    struct sa_galloc * g = sa_find(galloc);
    if (g == NULL) {
        sa_real(SA_CALLER);
        real.free(galloc);
        return;
    }
    pthread_mutex_lock(&sa_lock);
    for (struct sa_galloc ** p = &sa_list; *p != NULL; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    pthread_mutex_unlock(&sa_lock);
    if (g->real != NULL) {
        if (sa_stats) {
            sa_report_real_sizes(g);
        }
        real.free(g->real);
    }
    if (g->shadow != NULL) {
        real.free(g->shadow);
    }
    if (g->shadow_read != NULL) {
        real.free(g->shadow_read);
    }
    saFree(g->id);
    free(g->bufts);
    free(g);
}

// sa_shadow sizes graph with the shadow gallocr, for the stats.
static void sa_shadow(struct sa_galloc * g, struct ggml_cgraph * graph, const int * nids, const int * lids) {
    if (g->shadow == NULL || g->n_bufs > SA_MAX_BUFS) {
        return;
    }
    size_t sizes[SA_MAX_BUFS] = {0};
    // timed as the library's first plan of the graph is (wall time of this
    // thread), for the stats' first plan / reserve ratio
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    real.reserve_n_size(g->shadow, graph, nids, lids, sizes);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const int64_t ns = (int64_t) (t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    saShadowSizes(g->id, sizes, g->n_bufs, 0, ns);
    if (g->shadow_read == NULL) {
        return;
    }
    // The leaves no node reads (llama.cpp's inp_embd on token input) get a
    // dummy address for the call, so that gallocr takes them as external:
    // what it would reserve if it did not give them memory. The address is
    // never dereferenced (reserve_n_size allocates nothing) and is cleared
    // before returning.
    int n = graph->n_leafs, n_unread = 0;
    struct ggml_tensor ** unread = n > 0 ? (struct ggml_tensor **) malloc((size_t) n * sizeof(*unread)) : NULL;
    for (int i = 0; unread != NULL && i < n; i++) {
        struct ggml_tensor * leaf = graph->leafs[i];
        if (leaf->data != NULL || leaf->buffer != NULL || leaf->view_src != NULL) {
            continue;
        }
        int read = 0;
        for (int k = 0; k < graph->n_nodes && !read; k++) {
            const struct ggml_tensor * node = graph->nodes[k];
            read = node->view_src == leaf;
            for (int j = 0; j < GGML_MAX_SRC && !read; j++) {
                read = node->src[j] == leaf || (node->src[j] != NULL && node->src[j]->view_src == leaf);
            }
        }
        if (!read) {
            unread[n_unread++] = leaf;
        }
    }
    static char dummy[64];
    for (int i = 0; i < n_unread; i++) {
        unread[i]->data = dummy;
    }
    size_t read_sizes[SA_MAX_BUFS] = {0};
    real.reserve_n_size(g->shadow_read, graph, nids, lids, read_sizes);
    for (int i = 0; i < n_unread; i++) {
        unread[i]->data = NULL;
    }
    free(unread);
    saShadowSizes(g->id, read_sizes, g->n_bufs, 1, 0);
}

bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * nids, const int * lids) {
    struct sa_galloc * g = sa_find(galloc);
    if (g == NULL) {
        sa_real(SA_CALLER);
        if (sa_in_alloc != NULL) {
            sa_reserved_inside = 1;
        }
        return real.reserve_n(galloc, graph, nids, lids);
    }
    if (sa_stats) {
        sa_shadow(g, graph, nids, lids);
    }
    int64_t t0 = sa_stats ? sa_thread_ns() : 0;
    int r = SA_FALLBACK;
    if (g->real == NULL) {
        r = saReserveN(g->id, graph, (int *) nids, (int *) lids);
    }
    if (r == SA_FALLBACK) {
        sa_fall_back(g);
        r = real.reserve_n(g->real, graph, nids, lids);
    }
    sa_note(g, SA_CALL_RESERVE_N, t0, 0);
    return r != 0;
}

bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (sa_find(galloc) == NULL) {
        sa_real(SA_CALLER);
        return real.reserve(galloc, graph);
    }
    return ggml_gallocr_reserve_n(galloc, graph, NULL, NULL);
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * nids, const int * lids,
                                 size_t * sizes) {
    struct sa_galloc * g = sa_find(galloc);
    if (g == NULL) {
        sa_real(SA_CALLER);
        real.reserve_n_size(galloc, graph, nids, lids, sizes);
        return;
    }
    if (sa_stats) {
        sa_shadow(g, graph, nids, lids);
    }
    int64_t t0 = sa_stats ? sa_thread_ns() : 0;
    int r = SA_FALLBACK;
    if (g->real == NULL) {
        r = saReserveNSize(g->id, graph, (int *) nids, (int *) lids, sizes);
    }
    if (r == SA_FALLBACK) {
        sa_fall_back(g);
        real.reserve_n_size(g->real, graph, nids, lids, sizes);
    }
    sa_note(g, SA_CALL_RESERVE_N_SIZE, t0, 0);
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    struct sa_galloc * g = sa_find(galloc);
    if (g == NULL) {
        sa_real(SA_CALLER);
        return real.alloc_graph(galloc, graph);
    }
    // With stats, a graph the Go side has no plan for is planned first (and
    // timed as part of this call), so that the shadow gallocr can size it
    // before it is placed (gallocr leaves placed tensors alone).
    int64_t t0 = sa_stats ? sa_thread_ns() : 0, shadow_ns = 0;
    if (g->real == NULL && g->hit_state != NULL && sa_hit_last(g->hit_state, graph) == 1) {
        // a graph the plan placed last covers: placed without Go
        if (sa_stats) {
            int64_t ns = sa_thread_ns() - t0;
            saHits(g->id, 1);
            saNote(g->id, SA_CALL_ALLOC_GRAPH, ns, 0, 1);
        }
        return true;
    }
    if (sa_stats && g->real == NULL && saAllocCached(g->id, graph)) {
        sa_note(g, SA_CALL_ALLOC_GRAPH, t0, 1);
        return true;
    }
    if (sa_stats && g->real == NULL && saWouldPlan(g->id, graph)) {
        int64_t t1 = sa_thread_ns();
        sa_shadow(g, graph, NULL, NULL);
        shadow_ns = sa_thread_ns() - t1;
    }
    int r = SA_FALLBACK;
    if (g->real == NULL) {
        r = saAllocGraph(g->id, graph);
    }
    int hit = r == 1;
    if (r == SA_FALLBACK) {
        sa_fall_back(g);
        sa_in_alloc = g;
        sa_reserved_inside = 0;
        r = real.alloc_graph(g->real, graph);
        hit = r != 0 && !sa_reserved_inside;
        sa_in_alloc = NULL;
    }
    sa_note(g, SA_CALL_ALLOC_GRAPH, t0 + shadow_ns, hit);
    return r != 0;
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
    struct sa_galloc * g = sa_find(galloc);
    if (g == NULL) {
        sa_real(SA_CALLER);
        return real.get_buffer_size(galloc, buffer_id);
    }
    int64_t t0 = sa_stats ? sa_thread_ns() : 0;
    size_t size = g->real != NULL ? real.get_buffer_size(g->real, buffer_id) : saBufferSize(g->id, buffer_id);
    sa_note(g, SA_CALL_GET_BUFFER_SIZE, t0, 0);
    return size;
}

// Signals: Go needs SA_ONSTACK on every handler of a signal that may land on
// one of its threads; hosts such as llama-server install theirs without it.

static sigaction_fn real_sigaction;

static sigaction_fn sa_sigaction_fn(void) {
    if (real_sigaction == NULL) {
        real_sigaction = (sigaction_fn) dlsym(RTLD_NEXT, "sigaction");
    }
    return real_sigaction;
}

int sigaction(int sig, const struct sigaction * act, struct sigaction * old) {
    sigaction_fn f = sa_sigaction_fn();
    if (f == NULL) {
        return -1;
    }
    if (act != NULL && !(act->sa_flags & SA_ONSTACK) && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
        struct sigaction a = *act;
        a.sa_flags |= SA_ONSTACK;
        return f(sig, &a, old);
    }
    return f(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler) {
    struct sigaction a, old;
    memset(&a, 0, sizeof a);
    a.sa_handler = handler;
    a.sa_flags = SA_RESTART; // glibc's signal() has BSD semantics
    sigemptyset(&a.sa_mask);
    sigaddset(&a.sa_mask, sig);
    if (sigaction(sig, &a, &old) != 0) {
        return SIG_ERR;
    }
    return old.sa_handler;
}

static void sa_at_exit(void) {
    if (sa_mode > 0 && sa_stats) {
        pthread_mutex_lock(&sa_lock);
        for (struct sa_galloc * g = sa_list; g != NULL; g = g->next) {
            sa_report_real_sizes(g);
        }
        pthread_mutex_unlock(&sa_lock);
        saWriteStats();
    }
}

__attribute__((constructor)) static void sa_init(void) {
    sa_on();
    atexit(sa_at_exit);
}
