package plan

import (
	"testing"

	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestInplaceOutputReadByItsOp plans, with and without the planner's own
// check, a trace whose inplace op reads a strided view of one of its
// outputs: that output holds values the op reads, so it may not take the
// bytes of the op's dying input, and the plan must be safe as checked
// apart. The planner once placed it there, and only its opt-in check
// noticed.
func TestInplaceOutputReadByItsOp(t *testing.T) {
	p := tracetest.Program(t, inplaceReadsOutputFile)
	for _, withCheck := range []bool{false, true} {
		res, err := PlanProgram(p, Options{Check: withCheck})
		if err != nil {
			t.Fatalf("Check %v: %v", withCheck, err)
		}
		rep, err := check.Plan(p, res.Plan)
		if err != nil || !rep.Safe {
			t.Fatalf("Check %v: the plan (%v) is unsafe: %v %+v", withCheck, res.Plan.Offsets, err, rep)
		}
		if res.Plan.Offsets["b0"] == res.Plan.Offsets["b3"] {
			t.Errorf("Check %v: b0 and b3 share offset %d", withCheck, res.Plan.Offsets["b0"])
		}
	}
}
