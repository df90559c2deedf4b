package bench

import (
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
)

// BenchmarkReplay replays every quick workload under every policy with the
// default fit and reports the matrix's figures as metrics, so benchstat can
// compare policies and commits:
//
//	hwm-B, livelb-B, pending-peak-B  bytes
//	overhead                        HWM/LiveLB − 1
//	frag-at-peak                    external fragmentation at the peak
//	allocs/s                        buffers placed per second of replay
//
// ns/op and allocs/op are the whole replay's (simulation, statistics and
// the Allocator together). Run with
//
//	go test ./bench -run '^$' -bench Replay -benchmem -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	for _, w := range Workloads(true) {
		tr, err := w.Build()
		if err != nil {
			b.Fatal(err)
		}
		p, err := tr.Resolve()
		if err != nil {
			b.Fatal(err)
		}
		for _, pol := range subarena.Policies() {
			b.Run(w.Name+"/"+pol.String(), func(b *testing.B) {
				b.ReportAllocs()
				opts := trace.ReplayOptions{Policy: pol, Fit: arena.FitDefault}
				// Check the answer once before timing.
				res, err := trace.Replay(p, opts)
				if err != nil {
					b.Fatal(err)
				}
				frag, _, err := PeakFragmentation(p, res)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := trace.Replay(p, opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(res.HWM), "hwm-B")
				b.ReportMetric(float64(res.LiveLB), "livelb-B")
				b.ReportMetric(res.Overhead, "overhead")
				b.ReportMetric(frag, "frag-at-peak")
				b.ReportMetric(float64(res.PendingPeak), "pending-peak-B")
				b.ReportMetric(float64(res.Buffers)*float64(b.N)/b.Elapsed().Seconds(), "allocs/s")
			})
		}
	}
}

// BenchmarkFirstFitPlan places every quick workload with the first-fit
// baseline under whole-after-users lifetimes (the same metrics, without
// pending bytes).
func BenchmarkFirstFitPlan(b *testing.B) {
	for _, w := range Workloads(true) {
		tr, err := w.Build()
		if err != nil {
			b.Fatal(err)
		}
		p, err := tr.Resolve()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(w.Name, func(b *testing.B) {
			b.ReportAllocs()
			res, err := FirstFitPlan(p, subarena.WholeAfterUsers)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := FirstFitPlan(p, subarena.WholeAfterUsers); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.HWM), "hwm-B")
			b.ReportMetric(res.Fragmentation, "frag-at-peak")
			b.ReportMetric(float64(res.Allocs)*float64(b.N)/b.Elapsed().Seconds(), "allocs/s")
		})
	}
}
