package trace_test

import (
	"fmt"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// BenchmarkScaleParse parses the generated traces of scale_test.go at tracetest.Sizes
// (package trace/check's scale benchmarks run the checker and LiveLB on the same traces,
// package trace/replay's the replay).
func BenchmarkScaleParse(b *testing.B) {
	for _, sh := range tracetest.Shapes {
		for _, n := range tracetest.Sizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				data := sh.Gen(n)
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := trace.Parse(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
