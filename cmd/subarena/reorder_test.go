package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subarena/subarena/trace"
)

// TestPlanReorder: --reorder plans two independent branches one after the
// other, 4608 bytes instead of the input order's 8448; the plan checks
// clean against the trace --reordered-out writes, and not against the
// input, which holds both temporaries at once.
func TestPlanReorder(t *testing.T) {
	const big, small = 4096, 256
	alloc := func(n string, size int64) trace.Step {
		return trace.Step{Kind: trace.KindAlloc, Name: n, Size: size, Engine: "e"}
	}
	op := func(n string, reads []string, w string) trace.Step {
		return trace.Step{Kind: trace.KindOp, Name: n, Engine: "e", Reads: reads, Writes: []string{w}, Cost: 1}
	}
	rel := func(n string) trace.Step { return trace.Step{Kind: trace.KindRelease, Name: n} }
	tr := &trace.Trace{Name: "two-branches", Granule: 256, Engines: []string{"e"}, Steps: []trace.Step{
		alloc("x", small), op("in", nil, "x"),
		alloc("t1", big), op("a1", []string{"x"}, "t1"),
		alloc("t2", big), op("b1", []string{"x"}, "t2"), rel("x"),
		alloc("r1", small), op("a2", []string{"t1"}, "r1"), rel("t1"),
		alloc("r2", small), op("b2", []string{"t2"}, "r2"), rel("t2"),
		alloc("out", small), op("c", []string{"r1", "r2"}, "out"), rel("r1"), rel("r2"),
	}}
	dir := t.TempDir()
	in, planPath, reordered := filepath.Join(dir, "in.json"), filepath.Join(dir, "plan.json"), filepath.Join(dir, "reordered.json")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.Write(f, tr); err != nil {
		t.Fatal(err)
	}
	f.Close()
	resetFlags() // flag values outlast a run
	t.Cleanup(resetFlags)
	if out, code := run(t, "plan", in, "--reordered-out", reordered); code == 0 {
		t.Fatalf("--reordered-out without --reorder accepted\n%s", out)
	}
	resetFlags()
	out, code := run(t, "plan", in, "--budget", "0", "--reorder", "-o", planPath, "--reordered-out", reordered, "--json=false")
	for _, want := range []string{"size          4608 B", "fixed_order   size 8448 B, lower_bound 8448 B",
		"reordered     size 4608 B, lower_bound 4608 B", "kept", "order_bound   4352 B"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("plan --reorder: exit %d, want %q in\n%s", code, want, out)
		}
	}
	resetFlags()
	if out, code := run(t, "check", reordered, planPath, "--json=false"); code != 0 || !strings.HasPrefix(out, "safe:") {
		t.Fatalf("check against the reordered trace: exit %d\n%s", code, out)
	}
	if out, code := run(t, "check", in, planPath, "--json=false"); code != 1 {
		t.Fatalf("check against the input order: exit %d, want 1 (unsafe)\n%s", code, out)
	}
}
