package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/trace/internal/scalegen"
)

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
	for _, sh := range scalegen.Shapes {
		for _, n := range sizes {
			data := sh.Gen(n)
			if _, err := Parse(data); err != nil {
				t.Fatalf("%s %d: %v", sh.Name, n, err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", sh.Name, n)), data, 0o644); err != nil {
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
