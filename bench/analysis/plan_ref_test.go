package analysis

import (
	"os"
	"testing"
	"time"

	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace/plan"
)

// TestPlanReference places each workload with the offline planner (the
// whole graph known, 5 s of search) as a reference for what a safe plan of
// the same host program reaches. Slow at full size: set PLANREF=quick or
// PLANREF=full.
func TestPlanReference(t *testing.T) {
	mode := os.Getenv("PLANREF")
	if mode == "" {
		t.Skip("PLANREF not set")
	}
	for _, w := range bench.Workloads(mode != "full") {
		if w.Name == "llama" {
			continue
		}
		p, in := infoOf(t, w)
		r, err := plan.PlanProgram(p, plan.Options{Check: true, Budget: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if olb, _ := orderedLowerBound(in); r.Plan.Size < olb {
			t.Errorf("%s: the planner's safe plan (%d B) is below the ordered lower bound %d", w.Name, r.Plan.Size, olb)
		}
		t.Logf("%-14s plan %.3f LiveLB (planner's bound %.3f, proven %v, %s)", w.Name,
			float64(r.Plan.Size)/float64(in.LiveLB), float64(r.LowerBound)/float64(in.LiveLB), r.Proven, r.Method)
	}
}
