package plan

import (
	"errors"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestScaleShapesPlan plans every generated shape at a moderate size, greedy only and
// with a short budget: each plan passes the checker (Plan checks it; the test checks it
// again) and is no lower than the planner's lower bound; the online replay ran, unless
// the budget ended first.
func TestScaleShapesPlan(t *testing.T) {
	n := testutil.Count(1000, 300)
	shapes := append(planScaleShapes[:len(planScaleShapes):len(planScaleShapes)],
		struct {
			name  string
			gen   func(n int) []byte
			sizes []int
		}{"fanin", tracetest.Fanin, nil})
	for _, sh := range shapes {
		tr := scaleTrace(t, sh.gen(n))
		p := tracetest.Resolve(t, tr)
		for _, budget := range []time.Duration{0, 50 * time.Millisecond} {
			res, rr, err := planReplayed(tr, Options{Check: true, Budget: budget})
			if err != nil {
				t.Fatalf("%s budget %v: %v", sh.name, budget, err)
			}
			rep, err := check.Plan(p, res.Plan)
			if err != nil || !rep.Safe {
				t.Fatalf("%s budget %v: check %v %+v", sh.name, budget, err, rep)
			}
			if res.Method != "online replay" && res.Plan.Size < res.LowerBound {
				t.Fatalf("%s budget %v: size %d below the lower bound %d", sh.name, budget, res.Plan.Size, res.LowerBound)
			}
			// With a budget, a replay not finished when it ends is abandoned.
			if rr.hwm == 0 && !(budget > 0 && errors.Is(rr.err, trace.ErrStopped)) {
				t.Fatalf("%s budget %v: no replay (%v)", sh.name, budget, rr.err)
			}
		}
	}
}
