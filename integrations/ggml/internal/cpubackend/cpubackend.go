// Package cpubackend starts ggml's CPU backend from the pinned llama.cpp
// release that integrations/ggml links (release.sh unpacks it into
// integrations/ggml/.release).
//
// The release ships the CPU backend not in libggml-base.so but as one
// libggml-cpu-<arch>.so per instruction-set level (x64, sse42, haswell,
// skylakex, zen4, …) beside libggml.so; ggml_backend_load_all_from_path
// loads the best one this CPU runs. Its functions (threads, thread pools)
// are reached through the registry's proc addresses, never linked by name,
// so the same code runs on every variant. The directory is the one the
// linked libggml.so was loaded from (dladdr), so nothing needs configuring.
package cpubackend

/*
#cgo CPPFLAGS: -I${SRCDIR}/../../.release/llama.cpp/ggml/include
#cgo LDFLAGS: -L${SRCDIR}/../../.release/bins -lggml -lggml-base -ldl -Wl,-rpath,${SRCDIR}/../../.release/bins
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static pthread_once_t sa_load_once = PTHREAD_ONCE_INIT;
static ggml_backend_dev_t sa_cpu_dev;

static void sa_load(void) {
    sa_cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (sa_cpu_dev != NULL) {
        return; // the process loaded it already
    }
    Dl_info info;
    if (dladdr((void *) ggml_backend_load_all_from_path, &info) == 0 || info.dli_fname == NULL) {
        return;
    }
    char * path = strdup(info.dli_fname);
    if (path == NULL) {
        return;
    }
    ggml_backend_load_all_from_path(dirname(path));
    free(path);
    sa_cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
}

typedef void (*sa_set_threads_fn)(ggml_backend_t, int);
typedef ggml_threadpool_t (*sa_pool_new_fn)(struct ggml_threadpool_params *);
typedef void (*sa_pool_free_fn)(ggml_threadpool_t);
typedef void (*sa_set_pool_fn)(ggml_backend_t, ggml_threadpool_t);

static void * sa_proc(const char * name) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(sa_cpu_dev);
    return reg == NULL ? NULL : ggml_backend_reg_get_proc_address(reg, name);
}

// sa_cpu_init starts a CPU backend with threads threads; with own_pool and
// more than one thread, on a thread pool of its own whose workers sleep
// between nodes instead of polling. Returns 0, or -1 when the release has
// no CPU backend for this machine, -2 when the registry lacks a function.
static int sa_cpu_init(int threads, int own_pool, ggml_backend_t * out, ggml_threadpool_t * pool) {
    pthread_once(&sa_load_once, sa_load);
    *out = NULL;
    *pool = NULL;
    if (sa_cpu_dev == NULL) {
        return -1;
    }
    sa_set_threads_fn set_threads = (sa_set_threads_fn) sa_proc("ggml_backend_set_n_threads");
    if (set_threads == NULL) {
        return -2;
    }
    ggml_backend_t b = ggml_backend_dev_init(sa_cpu_dev, NULL);
    if (b == NULL) {
        return -1;
    }
    set_threads(b, threads);
    if (own_pool && threads > 1) {
        sa_pool_new_fn pool_new = (sa_pool_new_fn) sa_proc("ggml_threadpool_new");
        sa_set_pool_fn set_pool = (sa_set_pool_fn) sa_proc("ggml_backend_cpu_set_threadpool");
        if (pool_new == NULL || set_pool == NULL) {
            ggml_backend_free(b);
            return -2;
        }
        struct ggml_threadpool_params p = ggml_threadpool_params_default(threads);
        p.poll = 0;
        *pool = pool_new(&p);
        if (*pool == NULL) {
            ggml_backend_free(b);
            return -1;
        }
        set_pool(b, *pool);
    }
    *out = b;
    return 0;
}

static void sa_cpu_free(ggml_backend_t b, ggml_threadpool_t pool) {
    ggml_backend_free(b);
    if (pool != NULL) {
        sa_pool_free_fn pool_free = (sa_pool_free_fn) sa_proc("ggml_threadpool_free");
        if (pool_free != NULL) {
            pool_free(pool);
        }
    }
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrNoCPU reports that the release's CPU backend could not be started:
// no libggml-cpu-<arch>.so beside libggml.so runs on this machine, or the
// registry lacks a function this package calls.
var ErrNoCPU = errors.New("cpubackend: ggml's CPU backend is not available")

// ErrThreads reports a thread count below 1.
var ErrThreads = errors.New("cpubackend: a backend computes with at least 1 thread")

// Backend is a started CPU backend: a ggml_backend_t, and the thread pool
// it runs on when it has one of its own.
type Backend struct {
	b    C.ggml_backend_t
	pool C.ggml_threadpool_t
}

// New starts a CPU backend that computes with threads threads (at least
// 1). With ownPool and threads > 1 it runs on a thread pool of its own
// whose workers sleep between nodes instead of polling, for hosts that
// share the cores with other work; otherwise ggml makes a pool per
// computation, as llama.cpp does by default.
func New(threads int, ownPool bool) (*Backend, error) {
	if threads < 1 {
		return nil, fmt.Errorf("%w: %d threads", ErrThreads, threads)
	}
	var b C.ggml_backend_t
	var pool C.ggml_threadpool_t
	switch rc := C.sa_cpu_init(C.int(threads), boolInt(ownPool), &b, &pool); rc {
	case 0:
		return &Backend{b: b, pool: pool}, nil
	case -2:
		return nil, fmt.Errorf("%w: the CPU registry lacks a thread or pool function", ErrNoCPU)
	default:
		return nil, ErrNoCPU
	}
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Handle returns the ggml_backend_t, for cgo callers (convert it with
// (C.ggml_backend_t)(h)).
func (b *Backend) Handle() unsafe.Pointer { return unsafe.Pointer(b.b) }

// Free stops the backend and its thread pool. It is a no-op on nil or
// after the first call.
func (b *Backend) Free() {
	if b == nil || b.b == nil {
		return
	}
	C.sa_cpu_free(b.b, b.pool)
	b.b, b.pool = nil, nil
}
