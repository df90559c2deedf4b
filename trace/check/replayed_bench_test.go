package check_test

// The checker, LiveLowerBound and trace.LetGo on the plans and schedules the replay makes:
// these benchmarks drive the Allocator through package trace/replay, which imports this one, so
// they are external and reach the package's own test helpers through export_test.go.

import (
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/replay"
)

func benchCheck(b *testing.B, rel string) {
	p := tracetest.DataProgram(b, "../../testdata", rel)
	res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var rep *check.Report
	for b.Loop() {
		if rep, err = check.Plan(p, res.Plan); err != nil || !rep.Safe {
			b.Fatal(err, rep)
		}
	}
	b.ReportMetric(float64(rep.Pairs), "pairs")
}

func BenchmarkCheckGGML(b *testing.B)        { benchCheck(b, "ggml/ggml-tiny.json") }
func BenchmarkCheckMiniMallocK(b *testing.B) { benchCheck(b, "minimalloc/K.1048576.csv") }

func BenchmarkScaleCheck(b *testing.B) {
	tracetest.ForScaleShapes(b, func(b *testing.B, p *trace.Program) {
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			rep, err := check.Plan(p, res.Plan)
			if err != nil || !rep.Safe {
				b.Fatal(err, rep)
			}
		}
	})
}

func BenchmarkScaleLiveLB(b *testing.B) {
	tracetest.ForScaleShapes(b, func(b *testing.B, p *trace.Program) {
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
		if err != nil {
			b.Fatal(err)
		}
		s := replayedSchedule(res)
		b.ResetTimer()
		for b.Loop() {
			if lb := check.LiveLowerBound(p, s); lb != res.LiveLB {
				b.Fatal(lb, res.LiveLB)
			}
		}
	})
}

// BenchmarkCheckGrowth is `subarena check FILE` on the generated traces whose
// pinned bytes grow with their length (tracetest.CopyEngine without syncs,
// tracetest.Loop on two engines) at 10k, 20k and 40k steps: the replay, then
// the checker on its plan. ns/step and B/step stay flat when the time and
// memory are linear in the trace:
//
//	go test ./trace/check -run '^$' -bench CheckGrowth -benchmem
func BenchmarkCheckGrowth(b *testing.B) {
	tracetest.ForGrowthShapes(b, func(b *testing.B, p *trace.Program) {
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
		if err != nil {
			b.Fatal(err)
		}
		if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
			b.Fatal(err, rep)
		}
	})
}
