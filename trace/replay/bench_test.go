package replay

import (
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
)

func benchReplay(b *testing.B, rel string, pol subarena.Policy) {
	p := benchProgram(b, rel)
	b.ReportAllocs()
	var res *Result
	for b.Loop() {
		var err error
		if res, err = Run(p, Options{Policy: pol}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.HWM), "hwm-bytes")
	b.ReportMetric(res.Overhead, "overhead")
}

func BenchmarkReplayGGML(b *testing.B) {
	benchReplay(b, "ggml/ggml-tiny.json", subarena.SubrangeFenced)
}

func BenchmarkReplayMiniMallocK(b *testing.B) {
	benchReplay(b, "minimalloc/K.1048576.csv", subarena.SubrangeFenced)
}

func BenchmarkScaleReplay(b *testing.B) {
	forScaleShapes(b, func(b *testing.B, p *trace.Program) {
		for b.Loop() {
			if _, err := Run(p, Options{Policy: subarena.SubrangeFenced}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
