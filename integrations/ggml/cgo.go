package ggml

/*
#cgo CPPFLAGS: -I${SRCDIR}/.release/llama.cpp/ggml/include -I${SRCDIR}/.release/llama.cpp/ggml/src
#cgo CFLAGS: -O2
#include <stdlib.h>
#include "sa_ggml.h"

static const char * sa_op_name(int op) { return ggml_op_name((enum ggml_op) op); }
static const char * sa_type_name(int t) { return ggml_type_name((enum ggml_type) t); }
static int64_t sa_type_size(int t) { return (int64_t) ggml_type_size((enum ggml_type) t); }
static int64_t sa_blck_size(int t) { return (int64_t) ggml_blck_size((enum ggml_type) t); }
static int sa_can_inplace(int op) { return ggml_op_can_inplace((enum ggml_op) op); }
static int sa_op_count(void) { return GGML_OP_COUNT; }
static int sa_type_count(void) { return GGML_TYPE_COUNT; }
static ggml_backend_buffer_type_t sa_cpu_buft(void) { return ggml_backend_cpu_buffer_type(); }
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/subarena/subarena/trace/ggmltrace"
)

// maxSrc is GGML_MAX_SRC: the most sources a node has.
const maxSrc = C.GGML_MAX_SRC

// Tables of the linked ggml, read once.
var (
	opNames    []string
	opInplace  []bool // ggmltrace.InPlaceOp of each op: ggml's list, as the importer has it
	typeNames  []string
	typeSize   []int64
	typeBlck   []int64
	viewOpCode [4]int32 // VIEW, RESHAPE, PERMUTE, TRANSPOSE
)

var tablesOnce sync.Once

// loadTables fills the tables; newScanner calls it first. Linked to the
// release's libggml-base.so it runs at init too; built to resolve ggml in
// a host process (subarena_extggml), only then, since the host may load
// ggml after this package is initialised.
func loadTables() { tablesOnce.Do(readTables) }

func init() {
	if !hostGGML {
		loadTables()
	}
}

func readTables() {
	n := int(C.sa_op_count())
	opNames = make([]string, n)
	opInplace = make([]bool, n)
	for i := range n {
		opNames[i] = C.GoString(C.sa_op_name(C.int(i)))
		opInplace[i] = ggmltrace.InPlaceOp(opNames[i])
	}
	viewOpCode = [4]int32{C.GGML_OP_VIEW, C.GGML_OP_RESHAPE, C.GGML_OP_PERMUTE, C.GGML_OP_TRANSPOSE}
	nt := int(C.sa_type_count())
	typeNames = make([]string, nt)
	typeSize = make([]int64, nt)
	typeBlck = make([]int64, nt)
	for i := range nt {
		if p := C.sa_type_name(C.int(i)); p != nil {
			typeNames[i] = C.GoString(p)
		}
		typeSize[i] = int64(C.sa_type_size(C.int(i)))
		typeBlck[i] = int64(C.sa_blck_size(C.int(i)))
	}
	readVerified()
}

// linkedInplaceOps returns the ops the linked ggml's ggml_op_can_inplace
// lists, to check that ggmltrace's list is that ggml's.
func linkedInplaceOps() []string {
	loadTables()
	var out []string
	for i, name := range opNames {
		if C.sa_can_inplace(C.int(i)) != 0 {
			out = append(out, name)
		}
	}
	return out
}

func isViewOp(op int32) bool {
	return op == viewOpCode[0] || op == viewOpCode[1] || op == viewOpCode[2] || op == viewOpCode[3]
}

// cpuBufferType returns ggml_backend_cpu_buffer_type().
func cpuBufferType() unsafe.Pointer { return unsafe.Pointer(C.sa_cpu_buft()) }
