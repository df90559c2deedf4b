package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace/internal/scalegen"
)

// scaleShapes names the generated large traces at a size parameter n (about n steps for
// the loops, n views, n buffers or n runs).
var scaleShapes = []struct {
	name string
	gen  func(n int) []byte
}{
	{"loop2", func(n int) []byte { return scalegen.Loop(n/scalegen.LoopSteps, 2, 0) }},
	{"loop1", func(n int) []byte { return scalegen.Loop(n/scalegen.LoopSteps, 1, 0) }},
	{"loop2sync", func(n int) []byte { return scalegen.Loop(n/scalegen.LoopSteps, 2, 20) }},
	{"views", scalegen.Views},
	{"fanin", scalegen.Fanin},
	{"strided", scalegen.Strided},
}

// TestWriteScaleTraces writes the generated traces at the sizes listed in
// SUBARENA_SCALE_SIZES (default 1000,10000,100000) into the directory SUBARENA_SCALE_OUT,
// for timing the command line tools on them; without SUBARENA_SCALE_OUT it does nothing.
func TestWriteScaleTraces(t *testing.T) {
	dir := os.Getenv("SUBARENA_SCALE_OUT")
	if dir == "" {
		t.Skip("SUBARENA_SCALE_OUT not set")
	}
	sizes := []int{1000, 10000, 100000}
	if s := os.Getenv("SUBARENA_SCALE_SIZES"); s != "" {
		sizes = nil
		var n int
		for _, f := range filepathSplitList(s) {
			if _, err := fmt.Sscan(f, &n); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, sh := range scaleShapes {
		for _, n := range sizes {
			data := sh.gen(n)
			if _, err := Parse(data); err != nil {
				t.Fatalf("%s %d: %v", sh.name, n, err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", sh.name, n)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func filepathSplitList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// TestScaleShapes replays every generated shape under every policy at a moderate size:
// the checker agrees with the pairwise one, the safe policies' plans are safe and no
// lower than LiveLB, and LiveLB agrees with its pairwise segments.
func TestScaleShapes(t *testing.T) {
	n := 1000
	if testing.Short() || raceEnabled {
		n = 300
	}
	for _, sh := range scaleShapes {
		tr, err := Parse(sh.gen(n))
		if err != nil {
			t.Fatalf("%s: %v", sh.name, err)
		}
		p, err := tr.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		pairs := 0
		for _, pol := range subarena.Policies() {
			res, err := Replay(p, ReplayOptions{Policy: pol})
			if err != nil {
				t.Fatalf("%s %v: %v", sh.name, pol, err)
			}
			rep := sameReport(t, fmt.Sprintf("%s %v", sh.name, pol), p, res.Plan)
			if pol.Safe() && (!rep.Safe || res.LiveLB > res.HWM || res.LiveLB <= 0) {
				t.Fatalf("%s %v: safe %v, LiveLB %d, HWM %d", sh.name, pol, rep.Safe, res.LiveLB, res.HWM)
			}
			pairs += rep.Pairs
		}
		if pairs == 0 {
			t.Fatalf("%s: no plan shares bytes between buffers", sh.name)
		}

	}
}
