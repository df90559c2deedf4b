package plan

import "testing"

// TestReorderRuleString: every rule has its name, and a value past the
// table is printed as a number.
func TestReorderRuleString(t *testing.T) {
	for r, want := range map[ReorderRule]string{ReorderNet: "net", ReorderPeak: "peak", ReorderFree: "free", 7: "ReorderRule(7)"} {
		if got := r.String(); got != want {
			t.Errorf("ReorderRule(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}
