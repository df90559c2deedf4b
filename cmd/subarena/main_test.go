package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const example = "../../trace/testdata/split-qkv.json"

// run executes the root command with args and returns standard output and the exit code
// (standard error is logged).
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	r := runStreams(args...)
	if r.stderr != "" {
		t.Logf("subarena %s: stderr:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r.stdout, r.code
}

// result is one in-process run of the command: what it wrote to standard output and to
// standard error (a failing command's "subarena: ..." line included, as main prints it),
// and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

// runStreams executes the root command as main does, keeping standard output and
// standard error apart.
func runStreams(args ...string) result {
	var out, errOut bytes.Buffer
	code := execute(args, &out, &errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestReplayJSON(t *testing.T) {
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	out, code := run(t, "replay", example, "--policy", "subrange-fenced", "--json", "-o", planPath,
		"--perfetto", filepath.Join(dir, "timeline.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"trace", "policy", "hwm", "live_lb", "overhead", "pending_peak", "buffers", "ops", "plan"} {
		if _, ok := got[k]; !ok {
			t.Fatalf("replay --json lacks %q: %s", k, out)
		}
	}
	if got["policy"] != "subrange-fenced" || got["trace"] != "split-qkv" {
		t.Fatalf("unexpected header: %v", got)
	}
	plan := got["plan"].(map[string]any)
	if plan["format"] != "subarena-plan/v1" || plan["size"] != got["hwm"] {
		t.Fatalf("plan %v", plan)
	}
	// The plan written with -o checks clean.
	if out, code := run(t, "check", example, planPath, "--json=false"); code != 0 {
		t.Fatalf("check of the replayed plan: exit %d: %s", code, out)
	}
	var timeline struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "timeline.json"))
	if err != nil || json.Unmarshal(data, &timeline) != nil || len(timeline.TraceEvents) == 0 {
		t.Fatalf("perfetto output unreadable: %v", err)
	}
	slices, counters := 0, 0
	for _, e := range timeline.TraceEvents {
		switch e["ph"] {
		case "X":
			slices++
		case "C":
			counters++
		}
	}
	if slices != 4 || counters == 0 {
		t.Fatalf("%d op slices, %d counter samples", slices, counters)
	}
}

func TestCheckExitCodes(t *testing.T) {
	out, code := run(t, "check", example, "--policy", "ir-order", "--json=false")
	if code != 1 || !strings.Contains(out, "offload_v -> use_tmp") || !strings.Contains(out, "v -> qkv") {
		t.Fatalf("ir-order: exit %d\n%s", code, out)
	}
	out, code = run(t, "check", example, "--policy", "ir-order", "--json")
	var rep struct {
		Safe       bool `json:"safe"`
		Violations []struct {
			MissingEdge string `json:"missing_edge"`
		} `json:"violations"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Safe || len(rep.Violations) != 1 ||
		rep.Violations[0].MissingEdge != "offload_v -> use_tmp" {
		t.Fatalf("ir-order --json: exit %d\n%s", code, out)
	}
	if out, code := run(t, "check", example, "--policy", "whole-fenced", "--json=false"); code != 0 {
		t.Fatalf("whole-fenced: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"format": "subarena-plan/v1", "trace": "x", "size": 10, "offsets": {"qkv": 0}}`), 0o644)
	if _, code := run(t, "check", example, bad); code != 2 {
		t.Fatalf("plan missing a buffer: exit %d, want 2", code)
	}
	if _, code := run(t, "check", filepath.Join(dir, "missing.json")); code != 2 {
		t.Fatalf("missing file: exit %d, want 2", code)
	}
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	outPath := filepath.Join(dir, "x.json")
	if out, code := run(t, "import", example, "-o", outPath, "--json=false", "--format", ""); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	orig, _ := os.ReadFile(example)
	again, _ := os.ReadFile(outPath)
	if !bytes.Contains(again, []byte(`"format": "subarena-trace/v1"`)) || len(again) == 0 || len(orig) == 0 {
		t.Fatalf("import wrote %q", again)
	}
	csvPath := filepath.Join(dir, "x.csv")
	if out, code := run(t, "import", outPath, "-o", csvPath, "--policy", "subrange-fenced", "--format", ""); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	csv, _ := os.ReadFile(csvPath)
	if !strings.HasPrefix(string(csv), "id,lower,upper,size,offset\n") {
		t.Fatalf("csv %q", csv)
	}
	if _, code := run(t, "import", example, "-o", filepath.Join(dir, "y"), "--format", "nope"); code != 2 {
		t.Fatalf("bad format: exit %d, want 2", code)
	}
}

// TestBenchColumns: bench's table gives each row the allocations per second of the whole
// run and of the time inside the Allocator, the second no lower than the first; first-fit
// rows have no allocator figure. --json carries both, with the seconds behind them.
func TestBenchColumns(t *testing.T) {
	r := runClean(t, "bench", "--quick", "-o", "", "--workload", "llama", "--policy", "subrange-fenced,ir-order",
		"--fit", "lean", "--parallel", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if h := strings.Join(strings.Fields(lines[0]), " "); h !=
		"workload policy fit HWM LiveLB overhead frag@peak pending peak allocs/s allocator allocs/s safety" {
		t.Fatalf("header %q", lines[0])
	}
	rate := func(s string) float64 {
		mul := 1.0
		switch {
		case strings.HasSuffix(s, "M"):
			s, mul = strings.TrimSuffix(s, "M"), 1e6
		case strings.HasSuffix(s, "k"):
			s, mul = strings.TrimSuffix(s, "k"), 1e3
		}
		var f float64
		if _, err := fmt.Sscan(s, &f); err != nil {
			t.Fatalf("rate %q: %v", s, err)
		}
		return f * mul
	}
	rows := 0
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		rows++
		// The columns after the pending peak: allocs/s, allocator allocs/s, safety...
		i := slices.IndexFunc(f, func(s string) bool { return s == "safe" || s == "UNSAFE:" || s == "unsafe" })
		if i < 2 {
			t.Fatalf("row %q", l)
		}
		run, alloc := f[i-2], f[i-1]
		if strings.Contains(l, "first-fit") {
			if alloc != "-" {
				t.Fatalf("first-fit row %q has an allocator rate", l)
			}
			continue
		}
		if rate(alloc) < rate(run) {
			t.Fatalf("row %q: allocator rate below the whole run's", l)
		}
	}
	if rows != 3 { // both policies with the lean fit, and first-fit under ir-order's lifetimes
		t.Fatalf("%d rows:\n%s", rows, r.stdout)
	}
	r = runClean(t, "bench", "--quick", "-o", "", "--workload", "llama", "--policy", "subrange-fenced", "--fit", "lean",
		"--no-first-fit", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var m struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Cells) != 1 {
		t.Fatalf("JSON %v: %s", err, r.stdout)
	}
	c := m.Cells[0]
	run, _ := c["run_seconds"].(float64)
	in, _ := c["allocator_seconds"].(float64)
	if !(in > 0 && in <= run) || c["allocator_allocs_per_sec"] == nil {
		t.Fatalf("cell %v", c)
	}
}
