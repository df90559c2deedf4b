package trace_test

import (
	"bytes"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/tracefile"
)

// BenchmarkParseRoundTripGGML parses the written form of an imported ggml trace (read
// through package trace/tracefile, which imports this one: the benchmark is external).
func BenchmarkParseRoundTripGGML(b *testing.B) {
	tr, err := tracefile.Read(bytes.NewReader(testutil.Read(b, "../testdata", "ggml/ggml-tiny.json")), "ggml-tiny.json")
	if err != nil {
		b.Fatal(err)
	}
	data := trace.Marshal(tr)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := trace.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
