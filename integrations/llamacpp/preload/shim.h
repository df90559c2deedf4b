// Shared by shim.c and preload.go.

#ifndef SA_SHIM_H
#define SA_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"

// What the Go side answers a call it cannot serve: the shim then moves the
// allocator to a real gallocr for good and repeats the call there.
#define SA_FALLBACK (-1)

// Kinds of calls, for the stats (preload.go's callNames follows this order).
enum {
    SA_CALL_RESERVE_N = 0,
    SA_CALL_RESERVE_N_SIZE = 1,
    SA_CALL_ALLOC_GRAPH = 2,
    SA_CALL_GET_BUFFER_SIZE = 3,
    SA_CALL_KINDS = 4,
};

// The most buffer ids the stats' shadow gallocr sizes.
#define SA_MAX_BUFS 16

#endif
