package ggml

/*
#include "sa_ggml.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/subarena/subarena/trace"
)

// placed reads graph, just placed by a (AllocGraph), as a trace and the
// plan of offsets its own tensors were placed at, for the tests' check.Plan
// of dominated graphs. Relaid tensors are not supported.
func (a *Allocator) placed(graph unsafe.Pointer) (*trace.Trace, *trace.Plan, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sc, err := newScanner(a.buft)
	if err != nil {
		return nil, nil, err
	}
	defer sc.free()
	sc.s.buffer = a.buf
	if err := sc.scan(graph); err != nil {
		return nil, nil, err
	}
	ts, _ := sc.tensors()
	t, err := buildTrace(ts, "placed", a.align, a.rule)
	if err != nil {
		return nil, nil, err
	}
	base := uintptr(C.ggml_backend_buffer_get_base(a.buf))
	recs := sc.recs()
	p := &trace.Plan{Trace: t.Name, Size: a.size, Offsets: map[string]int64{}}
	for i := range ts {
		x := &ts[i]
		if x.kind != kindOwn {
			continue
		}
		tt := recs[x.rec].t
		if tt.data == nil {
			return nil, nil, fmt.Errorf("tensor %q was not placed", x.name)
		}
		p.Offsets[x.name] = int64(uintptr(tt.data) - base)
	}
	return t, p, nil
}

// hitLast runs sa_hit_last on a's HitState, as a C host would.
func (a *Allocator) hitLast(graph unsafe.Pointer) int {
	s := a.HitState()
	if s == nil {
		return 0
	}
	return int(C.sa_hit_last((*C.sa_state)(s), (*C.struct_ggml_cgraph)(graph)))
}

// checkScan runs sa_check_scan on a's scanner: what the hit path trusts of
// the last scan and placement (the tests call it after each placement).
func (a *Allocator) checkScan() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sc.s == nil {
		return errFreed
	}
	if r := int(C.sa_check_scan(a.sc.s)); r != 0 {
		return fmt.Errorf("ggml: scan record %d: its links or relaid hint disagree with the records", r-1)
	}
	return nil
}
