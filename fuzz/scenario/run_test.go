package scenario

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios and fuzz/scenario/seeds")

// TestScenarios runs every scenario file (the format of package fuzz/scenario) in
// testdata/scenarios and the seed scenarios of package fuzz in fuzz/scenario/seeds
// through Run, which checks the invariants after every command, and compares
// each command's output with the expected one. Run with -rewrite to regenerate the
// expected outputs (then read the diff).
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("../../testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	seeds, err := filepath.Glob("seeds/*.txt")
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seed scenarios: %v", err)
	}
	for _, f := range append(files, seeds...) {
		t.Run(filepath.Base(f), func(t *testing.T) { runScenarioFile(t, f) })
	}
}

func runScenarioFile(t *testing.T, path string) {
	f, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := Run(f)
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

// TestRunScriptErrors: a mistake in the script (not an answer of the Allocator)
// stops the run with FILE:LINE and ErrInvalid, returning the outputs before it.
func TestRunScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		src, want string
		outs      int
	}{
		{"alloc b 64 e", "s.txt:1: alloc: no allocator yet", 0},
		{"new engines=e\nuse o b read", "s.txt:2: use: unknown op \"o\"", 1},
		{"new engines=e\nsubmit o e\nuse o b read", "s.txt:3: use: unknown view \"b\"", 2},
		{"new engines=e\ndense d b shape=4 elem=1", "s.txt:2: dense: unknown buffer \"b\"", 1},
		{"new engines=e\ncommit c", "s.txt:2: commit: unknown claim \"c\"", 1},
		{"new engines=e\ncancel r", "s.txt:2: cancel: unknown reservation \"r\"", 1},
		{"new engines=e policy=nonsense\nstate", "s.txt:2: state: no allocator yet", 1},
	} {
		f, err := Parse("s.txt", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		outs, err := Run(f)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), tc.want) || len(outs) != tc.outs {
			t.Errorf("%q: %d outputs, error %v; want %d, %q", tc.src, len(outs), err, tc.outs, tc.want)
		}
	}
	// The Allocator's own errors are outputs, not script errors.
	f, _ := Parse("s.txt", []byte("new engines=e policy=nonsense\nnew engines=e capacity=256\nalloc b 512 e\nalloc c 64 x\nalloc b 64 e\nsplit p b 0 5 64"))
	outs, err := Run(f)
	if err != nil || outs[0] != "error: ErrInvalidConfig" || !strings.HasPrefix(outs[2], "error: ErrNoSpace (") || outs[3] != "error: ErrUnknownEngine" ||
		outs[5] != "error: ErrInvalidLayout" {
		t.Fatalf("%v %q", err, outs)
	}
}
