package tracefile

import (
	"bytes"
	"testing"

	"github.com/subarena/subarena/trace/internal/testfiles"
)

func BenchmarkReadGGML(b *testing.B) {
	data := testfiles.Read(b, sharedData, "ggml/ggml-tiny.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data), "ggml-tiny"); err != nil {
			b.Fatal(err)
		}
	}
}
