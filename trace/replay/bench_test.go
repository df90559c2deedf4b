package replay

import (
	"testing"
	"time"

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

// BenchmarkReplayGrowth replays the generated traces whose pinned bytes grow
// with their length (tracetest.CopyEngine without syncs: every half a copy op
// reads stays pinned for every later compute writer; tracetest.Loop on two
// engines for comparison) at 10k, 20k and 40k steps, as `subarena replay`
// does. ns/step and B/step stay flat when the time and memory are linear in
// the trace:
//
//	go test ./trace/replay -run '^$' -bench ReplayGrowth -benchmem
func BenchmarkReplayGrowth(b *testing.B) {
	tracetest.ForGrowthShapes(b, func(b *testing.B, p *trace.Program) {
		if _, err := Run(p, Options{Policy: subarena.SubrangeFenced}); err != nil {
			b.Fatal(err)
		}
	})
}
