// Package tracetest holds the test helpers the trace packages' tests share
// on the format's exported API: loading a file and resolving a trace,
// failing the test on an error.
package tracetest

import (
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/tracefile"
)

// Resolve returns tr resolved, failing the test when it does not resolve.
func Resolve(tb testing.TB, tr *trace.Trace) *trace.Program {
	tb.Helper()
	p, err := tr.Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Load returns the trace in the file at path (tracefile.Load), failing the
// test when it cannot be loaded.
func Load(tb testing.TB, path string) *trace.Trace {
	tb.Helper()
	tr, err := tracefile.Load(path)
	if err != nil {
		tb.Fatalf("load %s: %v", path, err)
	}
	return tr
}
