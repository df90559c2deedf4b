package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scenarioFile = "../../testdata/scenarios/01-view-chains.txt"

func writeScenario(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScenarioRun(t *testing.T) {
	want, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	// Without --check the script comes back with the actual outputs: for a file whose
	// outputs are right, the file itself.
	if out, code := runScen(t, "scenario", scenarioFile); code != 0 || out != string(want) {
		t.Fatalf("exit %d, output differs from the file:\n%s", code, out)
	}
	if out, code := runScen(t, "scenario", "--check", scenarioFile, "../../fuzz/scenario/seeds/1-view-chain.txt"); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("--check: exit %d: %s", code, out)
	}
	// Two files: each preceded by its name.
	p := writeScenario(t, "s.txt", "new engines=c capacity=1024\nalloc b 256 c\n")
	out, code := runScen(t, "scenario", p, p)
	if code != 0 || strings.Count(out, "=== "+p+"\n") != 2 || !strings.Contains(out, "alloc b 256 c\n----\nb at [0, 256)\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestScenarioCheckDiffers(t *testing.T) {
	p := writeScenario(t, "s.txt", "# a wrong expectation\nnew engines=c capacity=1024\n----\npolicy subrange-fenced, capacity 1024, granule 256\n\nalloc b 256 c\n----\nb at [256, 512)\n\nstate\n")
	r := runClean(t, "scenario", "--check", p)
	if r.code != 1 {
		t.Fatalf("exit %d: %+v", r.code, r)
	}
	if !strings.Contains(r.stdout, p+":6: alloc b 256 c\n--- got\nb at [0, 256)\n--- want\nb at [256, 512)\n") ||
		!strings.Contains(r.stdout, p+":10: state\n") || strings.Contains(r.stdout, ":2: new") {
		t.Fatalf("report:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "2 of 3 commands differ") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	// -w writes the actual outputs; the file then checks.
	if r := runClean(t, "scenario", "-w", p); r.code != 0 || !strings.Contains(r.stderr, "wrote "+p) {
		t.Fatalf("-w: %+v", r)
	}
	data, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(data), "# a wrong expectation\n") || !strings.Contains(string(data), "b at [0, 256)") {
		t.Fatalf("rewritten:\n%s", data)
	}
	if _, code := runScen(t, "scenario", "--check", p); code != 0 {
		t.Fatalf("after -w: exit %d", code)
	}
}

func TestScenarioBadInput(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"bad integer", "new engines=c\nalloc b big c\n", ":2: alloc: argument 2 \"big\": not an integer"},
		{"unknown buffer", "new engines=c\nrelease nothing\n", ":2: release: unknown buffer \"nothing\""},
		{"no allocator", "alloc b 1 c\n", ":1: alloc: no allocator yet"},
		{"unknown command", "frob\n", ":1: unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeScenario(t, "bad.txt", tc.text)
			r := runClean(t, "scenario", "--check", p)
			if r.code != 2 || !strings.Contains(r.stderr, "subarena: "+p+tc.want) {
				t.Errorf("%q: exit %d, stderr %q, want %q", tc.text, r.code, r.stderr, p+tc.want)
			}
		})
	}
	if r := runClean(t, "scenario", "missing.txt"); r.code != 2 || !strings.Contains(r.stderr, "missing.txt") {
		t.Fatalf("missing file: %+v", r)
	}
	if r := runClean(t, "scenario", "--check", "-w", scenarioFile); r.code != 2 {
		t.Fatalf("--check -w: %+v", r)
	}
}

// runScen is runClean returning standard output and the exit status.
func runScen(t *testing.T, args ...string) (string, int) {
	t.Helper()
	r := runClean(t, args...)
	if r.stderr != "" {
		t.Logf("subarena %s: stderr:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r.stdout, r.code
}
