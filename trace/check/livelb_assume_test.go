package check_test

import (
	"testing"

	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/plan"
	"github.com/subarena/subarena/trace/replay"
)

// TestLiveLBBoundsOffsetLayoutsOnly pins down what LiveLB assumes, as the
// package doc and docs/TRACE.md state it with these figures: on ggml-tiny's
// trace a safe plan that gives every buffer an offset (--no-relayout) is not
// below LiveLB, while the planner's plan, which lays buffers over strided
// footprints of others (placements), is. The relaid plan is bounded by the
// planner's own lower bound, not by LiveLB.
func TestLiveLBBoundsOffsetLayoutsOnly(t *testing.T) {
	p := tracetest.Program(t, "../../testdata/ggml/ggml-tiny.json")
	rr, err := replay.Run(p, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lb := rr.LiveLB
	if lb != 297088 || rr.HWM < lb {
		t.Fatalf("LiveLB %d, replay HWM %d; want LiveLB 297088 (the documented figure) at most the HWM", lb, rr.HWM)
	}
	offsets, err := plan.Plan(p.Trace, plan.Options{Check: true, NoRelayout: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets.Plan.Placements) != 0 || offsets.Plan.Size < lb {
		t.Errorf("offsets-only plan: %d B with %d placements, below LiveLB %d", offsets.Plan.Size,
			len(offsets.Plan.Placements), lb)
	}
	relaid, err := plan.Plan(p.Trace, plan.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.Plan(p, relaid.Plan)
	if err != nil || !rep.Safe {
		t.Fatalf("relaid plan: %v, safe %v", err, rep != nil && rep.Safe)
	}
	if n := len(relaid.Plan.Placements); n != 8 || relaid.Plan.Size != 241792 || relaid.Plan.Size >= lb ||
		relaid.LowerBound > relaid.Plan.Size {
		t.Errorf("relaid plan: %d B, %d placements, bound %d; want the documented 241792 B with 8 placements, below LiveLB %d",
			relaid.Plan.Size, n, relaid.LowerBound, lb)
	}
}
