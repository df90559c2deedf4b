package tracefile_test

import (
	"bytes"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace/tracefile"
)

func BenchmarkReadGGML(b *testing.B) {
	data := testutil.Read(b, sharedData, "ggml/ggml-tiny.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := tracefile.Read(bytes.NewReader(data), "ggml-tiny"); err != nil {
			b.Fatal(err)
		}
	}
}
