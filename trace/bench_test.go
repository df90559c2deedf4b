package trace

import (
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/trace/internal/testfiles"
)

func benchData(b *testing.B, rel string) []byte {
	b.Helper()
	return testfiles.Read(b, sharedData, rel)
}

func benchProgram(b *testing.B, rel string) *Program {
	b.Helper()
	data := benchData(b, rel)
	tr, err := Read(bytesReader(data), filepath.Base(rel))
	if err != nil {
		b.Fatal(err)
	}
	return mustResolve(b, tr)
}

func BenchmarkReadGGML(b *testing.B) {
	data := benchData(b, "ggml/ggml-tiny.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(bytesReader(data), "ggml-tiny"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRoundTripGGML(b *testing.B) {
	data := Marshal(benchProgram(b, "ggml/ggml-tiny.json").Trace)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
