package trace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestWriteScaleTraces writes the generated traces at the sizes listed in
// SUBARENA_SCALE_SIZES (default 1000,10000,100000) into the directory SUBARENA_SCALE_OUT,
// for timing the command line tools on them; without SUBARENA_SCALE_OUT it does nothing.
func TestWriteScaleTraces(t *testing.T) {
	dir, sizes := scaleOutput(t)
	for _, sh := range tracetest.Shapes {
		for _, n := range sizes {
			data := sh.Gen(n)
			if _, err := trace.Parse(data); err != nil {
				t.Fatalf("%s %d: %v", sh.Name, n, err)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", sh.Name, n)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// scaleOutput returns the directory SUBARENA_SCALE_OUT and the sizes listed, comma
// separated, in SUBARENA_SCALE_SIZES (default 1000,10000,100000); it skips the test when
// SUBARENA_SCALE_OUT is not set and fails it on a size that is not a number.
func scaleOutput(t *testing.T) (dir string, sizes []int) {
	t.Helper()
	if dir = os.Getenv("SUBARENA_SCALE_OUT"); dir == "" {
		t.Skip("SUBARENA_SCALE_OUT not set")
	}
	list := os.Getenv("SUBARENA_SCALE_SIZES")
	if list == "" {
		return dir, tracetest.Sizes
	}
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' }) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, n)
	}
	return dir, sizes
}
