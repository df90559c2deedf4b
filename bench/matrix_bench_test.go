package bench

import (
	"testing"
	"time"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
)

// BenchmarkReplay replays every quick workload under every policy with the
// default fit and reports the matrix's figures as metrics, so benchstat can
// compare policies and commits:
//
//	hwm-B, livelb-B, pending-peak-B  bytes
//	overhead                        HWM/LiveLB − 1
//	frag-at-peak                    external fragmentation at the peak
//	allocs/s                        buffers placed per second of replay
//	allocator-allocs/s              buffers placed per second spent inside
//	                                the Allocator's and its Timeline's calls
//
// ns/op and allocs/op are the whole replay's (simulation, statistics and
// the Allocator together); allocator-allocs/s leaves the simulation out.
// Run with
//
//	go test ./bench -run '^$' -bench Replay -benchmem -benchtime 3x
func BenchmarkReplay(b *testing.B) {
	for _, w := range Workloads(true) {
		p := benchtest.Build(b, w.Build)
		for _, pol := range subarena.Policies() {
			b.Run(w.Name+"/"+pol.String(), func(b *testing.B) {
				b.ReportAllocs()
				opts := replay.Options{Policy: pol, Fit: arena.FitDefault, TimeAllocator: true}
				// Check the answer once before timing.
				res, err := replay.Run(p, opts)
				if err != nil {
					b.Fatal(err)
				}
				frag, _, err := peakFragmentation(p, res)
				if err != nil {
					b.Fatal(err)
				}
				var inAllocator time.Duration
				for b.Loop() {
					r, err := replay.Run(p, opts)
					if err != nil {
						b.Fatal(err)
					}
					inAllocator += r.AllocatorTime
				}
				b.ReportMetric(float64(res.HWM), "hwm-B")
				b.ReportMetric(float64(res.LiveLB), "livelb-B")
				b.ReportMetric(res.Overhead, "overhead")
				b.ReportMetric(frag, "frag-at-peak")
				b.ReportMetric(float64(res.PendingPeak), "pending-peak-B")
				b.ReportMetric(float64(res.Buffers)*float64(b.N)/b.Elapsed().Seconds(), "allocs/s")
				b.ReportMetric(float64(res.Buffers)*float64(b.N)/inAllocator.Seconds(), "allocator-allocs/s")
			})
		}
	}
}

// BenchmarkAllocatorColumn replays the full llama, llama-engines and
// batching workloads under subrange-fenced with the lean fit, as the
// matrix's cells for them do, and reports what the "allocator allocs/s"
// column divides: the time inside the Allocator's and its Timeline's calls
// per buffer placed (allocator-ns/buffer) and per byte run its ops use
// (allocator-ns/run). Its CPU profile, focused on those calls, says where
// the column's time goes:
//
//	go test ./bench -run '^$' -bench AllocatorColumn -benchtime 40x -cpuprofile cpu.out
//	go tool pprof -top -cum -focus 'Allocator\)\.(AllocWith|Use|Release|Discard|Donate)|Timeline\)\.(Complete|Point|Submit|HostSync)|\)\.View$' cpu.out
func BenchmarkAllocatorColumn(b *testing.B) {
	for _, name := range []string{"llama", "llama-engines", "batching"} {
		w, err := LookupWorkload(name, false)
		if err != nil {
			b.Fatal(err)
		}
		p := benchtest.Build(b, w.Build)
		runs := 0
		for _, op := range p.Ops {
			for _, u := range op.Uses {
				fp, _ := p.Footprint(u.Ref)
				runs += fp.NumRuns()
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var inAllocator time.Duration
			buffers := 0
			for b.Loop() {
				res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced, Fit: arena.FitLean, TimeAllocator: true})
				if err != nil {
					b.Fatal(err)
				}
				inAllocator += res.AllocatorTime
				buffers = res.Buffers
			}
			perRun := float64(inAllocator.Nanoseconds()) / float64(b.N)
			b.ReportMetric(perRun/float64(buffers), "allocator-ns/buffer")
			b.ReportMetric(perRun/float64(runs), "allocator-ns/run")
		})
	}
}

// BenchmarkFirstFitPlan places every quick workload with the first-fit
// baseline under whole-after-users lifetimes (the same metrics, without
// pending bytes).
func BenchmarkFirstFitPlan(b *testing.B) {
	for _, w := range Workloads(true) {
		p := benchtest.Build(b, w.Build)
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

// BenchmarkPolicySweep measures how robust the subrange-fenced advantage
// is: each workload generator is run with seeds 1–10 (and the CNN also at
// Inception-v3's full width), and the metrics count the seeds where
// subrange-fenced needs a smaller, equal or larger arena than whole-fenced,
// with the worst ratio of the two. It asserts nothing: it is a measurement.
//
//	go test ./bench -run '^$' -bench PolicySweep -benchtime 1x
func BenchmarkPolicySweep(b *testing.B) {
	gens := []struct {
		name string
		gen  func(seed uint64) (*trace.Trace, error)
	}{
		{"llama-engines", func(s uint64) (*trace.Trace, error) { c := llamaQuick; c.Seed = s; return LlamaEngines(c) }},
		{"batching", func(s uint64) (*trace.Trace, error) { c := batchingQuick; c.Seed = s; return Batching(c) }},
		{"cnn-concat", func(s uint64) (*trace.Trace, error) { c := cnnQuick; c.Seed = s; return CNN(c) }},
		{"cnn-inception-v3", func(s uint64) (*trace.Trace, error) {
			c := CNNInceptionV3
			c.Frames, c.Seed = 2, s
			return CNN(c)
		}},
		{"random", func(s uint64) (*trace.Trace, error) { c := randomQuick; c.Seed = s; return Random(c) }},
	}
	for _, g := range gens {
		for _, fit := range []arena.Fit{arena.FitLean, arena.FitFast} {
			b.Run(g.name+"/"+fit.String(), func(b *testing.B) {
				var lower, equal, higher int
				worst := 0.0
				for b.Loop() {
					lower, equal, higher, worst = 0, 0, 0, 0
					for seed := uint64(1); seed <= 10; seed++ {
						p := benchtest.Build(b, func() (*trace.Trace, error) { return g.gen(seed) })
						w := benchtest.Replay(b, p, replay.Options{Policy: subarena.WholeFenced, Fit: fit})
						s := benchtest.Replay(b, p, replay.Options{Policy: subarena.SubrangeFenced, Fit: fit})
						worst = max(worst, float64(s.HWM)/float64(w.HWM))
						switch {
						case s.HWM < w.HWM:
							lower++
						case s.HWM == w.HWM:
							equal++
						default:
							higher++
						}
					}
				}
				b.ReportMetric(float64(lower), "seeds-lower")
				b.ReportMetric(float64(equal), "seeds-equal")
				b.ReportMetric(float64(higher), "seeds-higher")
				b.ReportMetric(worst, "worst-ratio")
			})
		}
	}
}
