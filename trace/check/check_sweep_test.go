package check

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/subarena/subarena/trace"
)

// sameReport fails t unless Plan and referenceCheck (the pairwise checker) give
// identical reports for plan, violation by violation and in the same order.
func sameReport(t *testing.T, what string, p *trace.Program, plan *trace.Plan) *Report {
	t.Helper()
	got, err := Plan(p, plan)
	want, werr := referenceCheck(p, plan)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, reference %v", what, err, werr)
	}
	if err != nil {
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: report differs from the pairwise checker's\ngot  %s\nwant %s\n%s", what,
			describeReport(got), describeReport(want), trace.Marshal(p.Trace))
	}
	return got
}

func describeReport(r *Report) string {
	s := fmt.Sprintf("safe %v pairs %d, %d violations:", r.Safe, r.Pairs, len(r.Violations))
	for i := range r.Violations {
		v := &r.Violations[i]
		s += fmt.Sprintf("\n  %s %v %d B %s.%d/%v -> %s/%v", v.Rule, v.Ranges, v.Bytes, v.Earlier.Buffer, 0,
			v.Earlier.Chain, v.Later.Buffer, v.Later.Chain) + " " + v.MissingEdge()
	}
	return s
}

// denseOffsets places every alloc buffer at a random offset below spread.
func denseOffsets(rng *rand.Rand, p *trace.Program, spread int64) *trace.Plan {
	plan := &trace.Plan{Trace: p.Trace.Name, Offsets: map[string]int64{}}
	for _, b := range p.Buffers {
		if !b.External {
			off := rng.Int64N(spread)
			plan.Offsets[b.Name] = off
			plan.Size = max(plan.Size, off+b.Size)
		}
	}
	return plan
}
