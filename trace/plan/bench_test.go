package plan

import (
	"testing"
	"time"

	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/replay"
)

// BenchmarkPlanGGMLTinyGreedy times the greedy start on ggml-tiny's
// resolved graph: in-place decisions, deriving the problem, the greedy
// variants up to the first that meets the lower bound, and the plan with
// its placements (no search, check or replay). ggml-alloc plans the same
// graph in 21-54 us.
func BenchmarkPlanGGMLTinyGreedy(b *testing.B) {
	p := tracetest.Program(b, ggmlTiny)
	res, err := PlanProgram(p, Options{Check: true})
	if err != nil || res.Plan.Size > ggmlBound(b, ggmlTiny) {
		b.Fatalf("size %d, %v", res.Plan.Size, err)
	}
	measure(b, func() {
		if _, err := PlanProgram(p, Options{}); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPlanGGMLTinyFromTrace adds resolving the trace.
func BenchmarkPlanGGMLTinyFromTrace(b *testing.B) { benchPlanGGMLTiny(b, Options{}) }

// BenchmarkPlanGGMLTinyFromTraceCheck adds the safety check of the plan
// (Options.Check) to BenchmarkPlanGGMLTinyFromTrace: the difference is what
// the check costs.
func BenchmarkPlanGGMLTinyFromTraceCheck(b *testing.B) { benchPlanGGMLTiny(b, Options{Check: true}) }

// BenchmarkPlanGGMLTinyChecked adds the safety check and the online replay
// that the CLI's plan runs.
func BenchmarkPlanGGMLTinyChecked(b *testing.B) {
	benchPlanGGMLTiny(b, Options{Check: true, Replay: replay.Online})
}

// benchPlanGGMLTiny times Plan with opts on ggml-tiny's trace.
func benchPlanGGMLTiny(b *testing.B, opts Options) {
	tr := tracetest.Load(b, ggmlTiny)
	measure(b, func() {
		if _, err := Plan(tr, opts); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkGreedyGGMLTiny times the greedy variants alone on ggml-tiny's
// derived problem (compiled once).
func BenchmarkGreedyGGMLTiny(b *testing.B) {
	c := mustCompile(ggmlTinyProblem(b))
	g := newGreedy(c)
	if _, h, _ := g.best(); h > ggmlBound(b, ggmlTiny) {
		b.Fatalf("greedy height %d", h)
	}
	measure(b, func() { g.best() })
}

// BenchmarkGreedyRun times one greedy variant on ggml-tiny: the inner
// placement loop, which allocates nothing.
func BenchmarkGreedyRun(b *testing.B) {
	c := mustCompile(ggmlTinyProblem(b))
	g := newGreedy(c)
	measure(b, func() { g.run(bySize, firstFit) })
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
	var nodes int64
	measure(b, func() {
		s.decide(lb, time.Time{}, nil, nil, DefaultHeuristics)
		nodes += s.nodes
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(nodes), "ns/node")
}

func ggmlTinyProblem(tb testing.TB) *Problem {
	p := tracetest.Program(tb, ggmlTiny)
	ip := newInplacer(p, func(a, b int) bool { return a < b }, true)
	ip.decide()
	return derive(ip).prob
}
