package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanReorder: --reorder plans two independent branches one after the
// other, 4608 bytes instead of the input order's 8448; the plan checks
// clean against the trace --reordered-out writes, and not against the
// input, which holds both temporaries at once.
func TestPlanReorder(t *testing.T) {
	dir := t.TempDir()
	in := "../../trace/plan/testdata/two-branches.json"
	planPath, reordered := filepath.Join(dir, "plan.json"), filepath.Join(dir, "reordered.json")
	t.Cleanup(resetFlags) // flag values outlast a run
	if r := runClean(t, "plan", in, "--reordered-out", reordered); r.code == 0 || !strings.Contains(r.stderr, "--reordered-out needs --reorder") {
		t.Fatalf("--reordered-out without --reorder: exit %d\n%s", r.code, r.stderr)
	}
	out, code := runFresh(t, "plan", in, "--budget", "0", "--reorder", "-o", planPath, "--reordered-out", reordered, "--json=false")
	for _, want := range []string{"size          4608 B", "fixed_order   size 8448 B, lower_bound 8448 B",
		"reordered     size 4608 B, lower_bound 4608 B", "; kept)", "order_bound   4608 B"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("plan --reorder: exit %d, want %q in\n%s", code, want, out)
		}
	}
	if out, code := runFresh(t, "check", reordered, planPath, "--json=false"); code != 0 || !strings.HasPrefix(out, "safe:") {
		t.Fatalf("check against the reordered trace: exit %d\n%s", code, out)
	}
	if out, code := runFresh(t, "check", in, planPath, "--json=false"); code != 1 {
		t.Fatalf("check against the input order: exit %d, want 1 (unsafe)\n%s", code, out)
	}
}
