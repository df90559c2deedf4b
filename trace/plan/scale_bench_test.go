package plan

import (
	"fmt"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// The scale benchmarks plan generated traces at three sizes with the budget at zero, the
// safety check included and the online replay left out (trace's BenchmarkScaleReplay
// measures it), so that the planner's own growth per 10x size shows in ns/op. The strided
// shape's size is its number of runs (above trace.CoverBudget a view's bytes are a
// superset of fewer runs). The fan-in shape is not among them: its buffers are all live
// at once, and the conflict graph the solver works on has an edge per pair of them.

var planScaleShapes = []struct {
	name  string
	gen   func(n int) []byte
	sizes []int
}{
	{"loop2", func(n int) []byte { return tracetest.Loop(n/tracetest.LoopSteps, 2, 0) }, []int{1000, 10000, 100000}},
	{"loop1", func(n int) []byte { return tracetest.Loop(n/tracetest.LoopSteps, 1, 0) }, []int{1000, 10000, 100000}},
	{"copy", func(n int) []byte { return tracetest.CopyEngine(n/tracetest.CopySteps, 0) }, []int{1000, 10000, 100000}},
	{"copysync", func(n int) []byte { return tracetest.CopyEngine(n/tracetest.CopySteps, 100) }, []int{1000, 10000, 100000}},
	{"views", tracetest.Views, []int{1000, 10000, 100000}},
	{"strided", tracetest.Strided, []int{2000, 20000, 200000}},
}

func scaleTrace(tb testing.TB, data []byte) *trace.Trace {
	tb.Helper()
	tr, err := trace.Parse(data)
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

func BenchmarkScalePlan(b *testing.B) {
	for _, sh := range planScaleShapes {
		for _, n := range sh.sizes {
			b.Run(fmt.Sprintf("%s/%d", sh.name, n), func(b *testing.B) {
				tr := scaleTrace(b, sh.gen(n))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := Plan(tr, Options{Check: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
