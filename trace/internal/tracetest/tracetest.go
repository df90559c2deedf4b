// Package tracetest holds what the trace packages' tests share: valid
// subarena-trace/v1 documents written from nothing, and helpers on the
// format's exported API.
//
// Random writes a random valid document for the property tests of trace,
// trace/replay and trace/plan. It tracks what the trace has brought into
// being byte by byte, so that every step it emits is valid; RandomTrace
// reads one back.
//
// Loop, CopyEngine, Views, Fanin and Strided write large valid documents of
// a few fixed shapes (Shapes, at Sizes) for the scaling tests and
// benchmarks. Every document is built step by step as JSON text, so
// generating one costs time linear in its size.
//
// The generators need nothing from the trace package, but the helpers
// (Resolve, Load, Program, DataProgram, ShapeProgram, ForScaleShapes) load
// and resolve through it, failing the test on an error: package trace's own
// tests that read generated documents are therefore external (trace_test).
package tracetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
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
	return Program(tb, path).Trace
}

// Program returns the trace in the file at path resolved (tracefile.LoadProgram),
// failing the test when it cannot be loaded.
func Program(tb testing.TB, path string) *trace.Program {
	tb.Helper()
	p, err := tracefile.LoadProgram(path)
	if err != nil {
		tb.Fatalf("load %s: %v", path, err)
	}
	return p
}

// RandomTrace returns a valid random trace of about steps steps
// (Random read back).
func RandomTrace(rng *rand.Rand, steps int) *trace.Trace {
	t, err := trace.Parse(Random(rng, steps))
	if err != nil {
		panic("Random wrote an invalid trace: " + err.Error())
	}
	return t
}

// DataProgram returns the program of the test data file rel under dir
// (testutil.Read), failing the test when it cannot be read or resolved.
func DataProgram(tb testing.TB, dir, rel string) *trace.Program {
	tb.Helper()
	p, err := tracefile.ReadProgram(bytes.NewReader(testutil.Read(tb, dir, rel)), filepath.Base(rel))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// ShapeProgram returns the program of the generated shape sh at size n, failing the test
// when it does not parse or resolve.
func ShapeProgram(tb testing.TB, sh Shape, n int) *trace.Program {
	tb.Helper()
	p, err := trace.ParseProgram(sh.Gen(n))
	if err != nil {
		tb.Fatalf("%s at %d: %v", sh.Name, n, err)
	}
	return p
}

// ForGrowthShapes runs step b.N times on every growth shape (growthShapes)
// at every size of growthSizes, as a sub-benchmark reporting allocations
// and ns/step: time per step of the trace, flat when the time is linear in
// the trace's length.
func ForGrowthShapes(b *testing.B, step func(b *testing.B, p *trace.Program)) {
	for _, sh := range growthShapes {
		for _, n := range growthSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				p, err := trace.ParseProgram(sh.Gen(n))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					step(b, p)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
			})
		}
	}
}

// ForScaleShapes runs run on every generated shape (Shapes) at
// every size of Sizes, as a sub-benchmark reporting allocations.
func ForScaleShapes(b *testing.B, run func(b *testing.B, p *trace.Program)) {
	for _, sh := range Shapes {
		for _, n := range Sizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				p := ShapeProgram(b, sh, n)
				b.ReportAllocs()
				b.ResetTimer()
				run(b, p)
			})
		}
	}
}
