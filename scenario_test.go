package subarena

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/trace/scenario"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios and trace/scenario/seeds")

// TestScenarios runs every scenario file (the format of package trace/scenario) in
// testdata/scenarios and the seed scenarios of package fuzz in trace/scenario/seeds
// through RunScenario, which checks the invariants after every command, and compares
// each command's output with the expected one. Run with -rewrite to regenerate the
// expected outputs (then read the diff).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	seeds, err := filepath.Glob("trace/scenario/seeds/*.txt")
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seed scenarios: %v", err)
	}
	for _, f := range append(files, seeds...) {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarioFile(t, f) })
	}
}

func runScenarioFile(t *testing.T, path string) {
	f, err := scenario.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := RunScenario(f)
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(path, f.Format(outs), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for i, b := range f.Blocks {
		if outs[i] != b.Want || !b.HasWant {
			t.Errorf("%s:%d: %s\n--- got\n%s\n--- want\n%s", path, b.Line, b.Cmd.Text, outs[i], b.Want)
		}
	}
}
