package kernels

import (
	"slices"
	"testing"
)

// TestTable: every entry names an op, types ggml knows by these names, a
// layout and why it is safe, and no (op, variant) is listed twice.
func TestTable(t *testing.T) {
	seen := map[[2]string]bool{}
	for _, e := range InPlace {
		key := [2]string{e.Op, e.Variant}
		if e.Op == "" || e.Why == "" || len(e.Types) == 0 || e.Layout.String() == "unknown layout" {
			t.Errorf("%v: incomplete entry %+v", key, e)
		}
		if seen[key] {
			t.Errorf("%v listed twice", key)
		}
		seen[key] = true
		for _, typ := range e.Types {
			if !slices.Contains([]string{"f32", "f16", "bf16"}, typ) {
				t.Errorf("%v: type %q is not a float type ggml names so", key, typ)
			}
		}
	}
}
