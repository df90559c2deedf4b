package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/tracefile"
)

// runFresh is run with every flag of every command back at its default
// first (resetFlags): flag values live in package variables and outlast one
// Execute.
func runFresh(t *testing.T, args ...string) (string, int) {
	t.Helper()
	resetFlags()
	return run(t, args...)
}

// resetFlags sets every flag of every command back to its default.
func resetFlags() {
	var reset func(c *cobra.Command)
	reset = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				_ = sv.Replace(nil)
			} else {
				_ = f.Value.Set(f.DefValue)
			}
			f.Changed = false
		})
		for _, sub := range c.Commands() {
			reset(sub)
		}
	}
	reset(rootCmd)
}

func TestBenchQuickJSON(t *testing.T) {
	dir := t.TempDir()
	out, code := runFresh(t, "bench", "--quick", "--json", "-o", dir, "--workload", "cnn-concat,llama-engines",
		"--fit", "lean", "--timeline", "cnn-concat")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var m struct {
		Quick bool
		Cells []struct {
			Workload, Policy, Fit string
			HWM                   int64
			Violations            int
		}
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	policies := map[string]map[string]bool{}
	for _, c := range m.Cells {
		if policies[c.Workload] == nil {
			policies[c.Workload] = map[string]bool{}
		}
		policies[c.Workload][c.Policy] = true
	}
	for _, w := range []string{"cnn-concat", "llama-engines"} {
		if len(policies[w]) != 5 {
			t.Fatalf("%s has policies %v", w, policies[w])
		}
	}
	svgs := map[string][]byte{}
	for _, f := range []string{"bench.svg", "timeline.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		benchtest.SVG(t, data)
		svgs[f] = data
	}
	// bench.html: every workload and both pictures, inline.
	report, err := os.ReadFile(filepath.Join(dir, "bench.html"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(report)
	if strings.Count(html, "<svg") != 2 || strings.Contains(html, "<?xml") || strings.Contains(html, " src=") ||
		!strings.Contains(html, "<b>cnn-concat</b>") || !strings.Contains(html, "<b>llama-engines</b>") {
		t.Fatalf("bench.html has %d pictures, or lacks a workload", strings.Count(html, "<svg"))
	}
	for f, data := range svgs {
		body := string(data[bytes.Index(data, []byte("<svg")):])
		if !strings.Contains(html, body) {
			t.Fatalf("bench.html does not hold %s as it is", f)
		}
	}
}

func TestBenchTableAndBadFlags(t *testing.T) {
	out, code := runFresh(t, "bench", "--quick", "-o", "", "--workload", "cnn-concat", "--policy", "ir-order,subrange-fenced",
		"--fit", "fast", "--no-first-fit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "UNSAFE") || !strings.Contains(out, "subrange-fenced") || strings.Count(out, "\n") != 3 {
		t.Fatalf("table:\n%s", out)
	}
	for _, args := range [][]string{
		{"bench", "--quick", "-o", "", "--workload", "nope"},
		{"bench", "--quick", "-o", "", "--policy", "nope"},
		{"bench", "--quick", "-o", "", "--fit", "nope"},
		{"bench", "--quick", "-o", "", "--timeline", "nope"},
		{"bench", "extra-arg"},
	} {
		if _, code := runFresh(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestVizAndPerfetto(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "t.svg")
	if out, code := runFresh(t, "viz", example, "-o", svg, "--policy", "whole-fenced"); code != 0 {
		t.Fatalf("viz: exit %d: %s", code, out)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	benchtest.SVG(t, data)
	if !bytes.Contains(data, []byte("qkv")) || !bytes.Contains(data, []byte("high-water mark")) {
		t.Fatal("timeline lacks the buffer or the high-water mark")
	}
	// A plan: replay writes one, viz draws it.
	plan := filepath.Join(dir, "plan.json")
	if out, code := runFresh(t, "replay", example, "-o", plan); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, out)
	}
	if out, code := runFresh(t, "viz", example, "--plan", plan, "-o", "-"); code != 0 || !strings.Contains(out, "<svg") {
		t.Fatalf("viz --plan: exit %d", code)
	}
	js := filepath.Join(dir, "p.json")
	if out, code := runFresh(t, "perfetto", example, "-o", js, "--policy", "ir-order"); code != 0 {
		t.Fatalf("perfetto: exit %d: %s", code, out)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if data, err := os.ReadFile(js); err != nil || json.Unmarshal(data, &doc) != nil || len(doc.TraceEvents) == 0 {
		t.Fatalf("perfetto output unreadable: %v", err)
	}
	for _, args := range [][]string{
		{"viz", "no-such-file.json", "-o", filepath.Join(dir, "x.svg")},
		{"viz", example, "--policy", "nope", "-o", "-"},
		{"viz", example, "--plan", "no-such-plan.json", "-o", "-"},
		{"perfetto", example, "--fit", "nope", "-o", "-"},
		{"perfetto"},
	} {
		if _, code := runFresh(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestVizPlanPlacements draws the plan of ggml-tiny, whose in-place outputs over strided
// inputs are placements, moved up by one granule so that no host sits at offset 0: every
// placed buffer appears, outlined and named over its host, and each of its rectangles
// lies inside its host's range, never at offset 0.
func TestVizPlanPlacements(t *testing.T) {
	dir := t.TempDir()
	planPath, moved, svg := filepath.Join(dir, "plan.json"), filepath.Join(dir, "moved.json"), filepath.Join(dir, "t.svg")
	if out, code := runFresh(t, "plan", ggmlTiny, "--budget", "0", "-o", planPath, "--json=false"); code != 0 {
		t.Fatalf("plan: exit %d: %s", code, out)
	}
	pl, err := tracefile.LoadPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	p := benchtest.Program(t, ggmlTiny)
	if len(pl.Placements) == 0 {
		t.Fatal("the plan has no placements")
	}
	for n := range pl.Offsets {
		pl.Offsets[n] += p.Trace.Granule
	}
	pl.Size += p.Trace.Granule
	var buf bytes.Buffer
	if err := trace.WritePlan(&buf, pl); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := runFresh(t, "check", ggmlTiny, moved, "--json=false"); code != 0 || !strings.HasPrefix(out, "safe:") {
		t.Fatalf("moved plan: exit %d: %s", code, out)
	}
	if out, code := runFresh(t, "viz", ggmlTiny, "--plan", moved, "-o", svg); code != 0 {
		t.Fatalf("viz --plan: exit %d: %s", code, out)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	benchtest.SVG(t, data)
	seen := map[string]int{}
	re := regexp.MustCompile(`<title>(\S+) over (\S+) \[(\d+), (\d+)\)`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		name, host := m[1], m[2]
		lo, _ := strconv.ParseInt(m[3], 10, 64)
		hi, _ := strconv.ParseInt(m[4], 10, 64)
		place, ok := pl.Placements[name]
		if !ok || place.Of != host {
			t.Fatalf("%s drawn over %s; its placement is %+v", name, host, place)
		}
		ref, _ := p.Lookup(host)
		off := pl.Offsets[host]
		if lo == 0 || lo < off || hi > off+p.Buffers[ref.Buffer].Size {
			t.Fatalf("%s drawn at [%d, %d), outside its host %s at [%d, %d)", name, lo, hi, host, off,
				off+p.Buffers[ref.Buffer].Size)
		}
		seen[name]++
	}
	for name := range pl.Placements {
		if seen[name] == 0 {
			t.Fatalf("%s is not drawn over its host", name)
		}
	}
	if !bytes.Contains(data, []byte("laid over its host")) || !bytes.Contains(data, []byte(`stroke-dasharray="3 2"`)) {
		t.Fatal("placed buffers are not outlined")
	}
}
