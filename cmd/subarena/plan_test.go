package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ggmlTiny = "../../testdata/ggml/ggml-tiny.json"

// TestPlanThenCheck: the plan of ggml-tiny reaches the in-place subrange bound with
// placements over strided inputs and checks clean against the trace as it is; shifted onto
// live bytes, a placement is reported unsafe; the rewritten trace takes the plan too.
func TestPlanThenCheck(t *testing.T) {
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	rewritten := filepath.Join(dir, "rewritten.json")
	out, code := run(t, "plan", ggmlTiny, "--budget", "0", "-o", planPath, "--trace-out", rewritten, "--json=false")
	if code != 0 || !strings.Contains(out, "size          241792 B") {
		t.Fatalf("plan: exit %d\n%s", code, out)
	}
	if out, code := run(t, "check", ggmlTiny, planPath, "--json=false"); code != 0 || !strings.HasPrefix(out, "safe:") {
		t.Fatalf("check against the original trace: exit %d\n%s", code, out)
	}
	if out, code := run(t, "check", rewritten, planPath, "--json=false"); code != 2 {
		t.Fatalf("placements against the rewritten trace: exit %d, want 2\n%s", code, out)
	}
	data, err := os.ReadFile(planPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	pls := doc["placements"].(map[string]any)
	silu := pls["gate_silu-0"].(map[string]any)
	if silu["of"] != "gate_up-0" || len(pls) != len(doc["relaid"].([]any)) {
		t.Fatalf("placements %v", pls)
	}
	// The offsets alone fit the rewritten trace.
	delete(doc, "placements")
	flat := filepath.Join(dir, "flat.json")
	writeJSON(t, flat, doc)
	if out, code := run(t, "check", rewritten, flat, "--json=false"); code != 0 {
		t.Fatalf("offsets on the rewritten trace: exit %d\n%s", code, out)
	}
	// gate_silu-0 moved onto the up half, which ffn_act-0 still reads.
	doc["placements"] = pls
	silu["offset"] = 2752.0
	tampered := filepath.Join(dir, "tampered.json")
	writeJSON(t, tampered, doc)
	out, code = run(t, "check", ggmlTiny, tampered, "--json=false")
	if code != 1 || !strings.Contains(out, "UNSAFE") || !strings.Contains(out, "gate_silu-0") {
		t.Fatalf("tampered placement: exit %d\n%s", code, out)
	}
	// Moved outside its host, it does not fit the trace.
	silu["offset"] = 1e6
	writeJSON(t, tampered, doc)
	if out, code := run(t, "check", ggmlTiny, tampered, "--json=false"); code != 2 {
		t.Fatalf("placement outside its host: exit %d\n%s", code, out)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanReplayKeptReportsBound: on MiniMalloc instance H with --budget 0 the online
// replay's plan is kept, and the report still gives a lower bound (the planner's: no op
// of the trace is inplace, so it holds for every plan), where it used to say 0.
func TestPlanReplayKeptReportsBound(t *testing.T) {
	out, code := runFresh(t, "plan", "--budget", "0", "../../testdata/minimalloc/H.1048576.csv", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var doc struct {
		Size       int64  `json:"size"`
		LowerBound int64  `json:"lower_bound"`
		Method     string `json:"method"`
		Proven     bool   `json:"proven"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Method != "online replay" || doc.LowerBound != 1048576 || doc.LowerBound > doc.Size || doc.Proven != (doc.Size == doc.LowerBound) {
		t.Fatalf("size %d, lower_bound %d, method %q, proven %v", doc.Size, doc.LowerBound, doc.Method, doc.Proven)
	}
}
