package replay

import (
	"time"

	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

func benchReplay(b *testing.B, rel string, pol subarena.Policy) {
	p := tracetest.DataProgram(b, sharedData, rel)
	b.ReportAllocs()
	var res *Result
	var inAllocator time.Duration
	for b.Loop() {
		var err error
		if res, err = Run(p, Options{Policy: pol, TimeAllocator: true}); err != nil {
			b.Fatal(err)
		}
		inAllocator += res.AllocatorTime
	}
	b.ReportMetric(float64(res.HWM), "hwm-bytes")
	b.ReportMetric(res.Overhead, "overhead")
	// The part of each replay spent inside the Allocator's and the
	// Timeline's calls (Result.AllocatorTime), the simulation left out.
	b.ReportMetric(float64(inAllocator.Nanoseconds())/float64(b.N), "allocator-ns/op")
}

func BenchmarkReplayGGML(b *testing.B) {
	benchReplay(b, "ggml/ggml-tiny.json", subarena.SubrangeFenced)
}

func BenchmarkReplayMiniMallocK(b *testing.B) {
	benchReplay(b, "minimalloc/K.1048576.csv", subarena.SubrangeFenced)
}

func BenchmarkScaleReplay(b *testing.B) {
	tracetest.ForScaleShapes(b, func(b *testing.B, p *trace.Program) {
		for b.Loop() {
			if _, err := Run(p, Options{Policy: subarena.SubrangeFenced}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
