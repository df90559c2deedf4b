package trace

import (
	"fmt"
	"testing"

	"github.com/subarena/subarena/trace/internal/scalegen"
)

// The scale benchmarks run replay, check and LiveLB on the generated traces of
// scale_test.go at three sizes, so that growth per 10x size shows in ns/op.

var scaleSizes = []int{1000, 10000, 100000}

func scaleProgram(b *testing.B, gen func(int) []byte, n int) *Program {
	b.Helper()
	tr, err := Parse(gen(n))
	if err != nil {
		b.Fatal(err)
	}
	return mustResolve(b, tr)
}

func forScaleShapes(b *testing.B, run func(b *testing.B, p *Program)) {
	for _, sh := range scalegen.Shapes {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				p := scaleProgram(b, sh.Gen, n)
				b.ReportAllocs()
				b.ResetTimer()
				run(b, p)
			})
		}
	}
}

func BenchmarkScaleParse(b *testing.B) {
	for _, sh := range scalegen.Shapes {
		for _, n := range scaleSizes {
			b.Run(fmt.Sprintf("%s/%d", sh.Name, n), func(b *testing.B) {
				data := sh.Gen(n)
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Parse(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
