package trace

import (
	"strings"
	"testing"
)

func TestPlanRoundTrip(t *testing.T) {
	in := `{"format": "subarena-plan/v1", "trace": "t", "size": 512, "offsets": {"b": 256, "a": 0},
		"policy": "whole-fenced", "lower_bound": 256, "ms": 1.5, "extra": {"ignored": [1, 2]}}`
	p, err := ParsePlan([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if p.Size != 512 || p.Offsets["b"] != 256 || p.Policy != "whole-fenced" || p.LowerBound != 256 || p.Ms != 1.5 {
		t.Fatalf("%+v", p)
	}
	var b strings.Builder
	if err := WritePlan(&b, p); err != nil {
		t.Fatal(err)
	}
	again, err := ParsePlan([]byte(b.String()))
	if err != nil || !again.Equal(p) {
		t.Fatalf("round trip: %v\n%s", err, b.String())
	}
	for _, bad := range []string{
		`{"trace": "t", "size": 1, "offsets": {}}`,
		`{"format": "subarena-plan/v2", "trace": "t", "size": 1, "offsets": {}}`,
		`{"format": "subarena-plan/v1", "trace": "t", "size": 1.5, "offsets": {}}`,
		`{"format": "subarena-plan/v1", "trace": "t", "size": 1, "offsets": {"a": "0"}}`,
		`{"format": "subarena-plan/v1", "trace": "t", "size": 1, "offsets": {"a": 0, "a": 1}}`,
	} {
		if _, err := ParsePlan([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
