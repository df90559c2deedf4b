package plan

import (
	"testing"
	"time"

	"github.com/subarena/subarena/trace/replay"
)

// BenchmarkPlanGGMLTinyGreedy times the greedy start on ggml-tiny's
// resolved graph: in-place decisions, deriving the problem, the greedy
// variants up to the first that meets the lower bound, and the plan with
// its placements (no search, check or replay). ggml-alloc plans the same
// graph in 21-54 us.
func BenchmarkPlanGGMLTinyGreedy(b *testing.B) {
	tr := loadTrace(b, ggmlTiny)
	p, err := tr.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	res, err := PlanProgram(p, Options{})
	if err != nil || res.Plan.Size > ggmlBound(b, ggmlTiny) {
		b.Fatalf("size %d, %v", res.Plan.Size, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := PlanProgram(p, Options{NoCheck: true}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkPlanGGMLTinyFromTrace adds resolving the trace.
func BenchmarkPlanGGMLTinyFromTrace(b *testing.B) {
	tr := loadTrace(b, ggmlTiny)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := Plan(tr, Options{NoCheck: true}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkPlanGGMLTinyChecked adds the safety check and the replay that
// Plan runs by default.
func BenchmarkPlanGGMLTinyChecked(b *testing.B) {
	tr := loadTrace(b, ggmlTiny)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := Plan(tr, Options{Replay: replay.Online}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkGreedyGGMLTiny times the greedy variants alone on ggml-tiny's
// derived problem (compiled once).
func BenchmarkGreedyGGMLTiny(b *testing.B) {
	c := mustCompile(ggmlTinyProblem(b))
	g := newGreedy(c)
	if _, h, _ := g.best(); h > ggmlBound(b, ggmlTiny) {
		b.Fatalf("greedy height %d", h)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		g.best()
	}
	reportCPU(b, cpu0)
}

// BenchmarkGreedyRun times one greedy variant on ggml-tiny: the inner
// placement loop, which allocates nothing.
func BenchmarkGreedyRun(b *testing.B) {
	c := mustCompile(ggmlTinyProblem(b))
	g := newGreedy(c)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		g.run(bySize, firstFit)
	}
	reportCPU(b, cpu0)
}

// BenchmarkSearchDecide times one decision search on MiniMalloc C at its
// lower bound (a few hundred nodes), reporting ns per node too. After the
// first run a search allocates nothing.
func BenchmarkSearchDecide(b *testing.B) {
	c := mustCompile(loadInstance(b, "C"))
	s := newSearcher(c)
	lb := c.lowerBound()
	if st := s.decide(lb, time.Time{}, nil, nil, DefaultHeuristics); st != found {
		b.Fatalf("status %d", st)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var nodes int64
	cpu0 := cpuTime()
	for b.Loop() {
		s.decide(lb, time.Time{}, nil, nil, DefaultHeuristics)
		nodes += s.nodes
	}
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(nodes), "ns/node")
}

func ggmlTinyProblem(tb testing.TB) *Problem {
	tr := loadTrace(tb, ggmlTiny)
	p, err := tr.Resolve()
	if err != nil {
		tb.Fatal(err)
	}
	ip := newInplacer(p, func(a, b int) bool { return a < b }, true)
	ip.decide()
	return derive(ip).prob
}
