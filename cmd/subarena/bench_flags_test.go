package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchRefusesBeforeRunning: bench refuses an output directory it cannot write and a
// negative --parallel before running the matrix: nothing on standard output, exit 2.
func TestBenchRefusesBeforeRunning(t *testing.T) {
	file := writeTemp(t, t.TempDir(), "file", "x")
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"bench", "--quick", "--no-progress", "--workload", "cnn-concat", "-o", filepath.Join(file, "out")},
			"subarena: -o " + filepath.Join(file, "out") + ": mkdir " + file + ": not a directory"},
		{[]string{"bench", "--quick", "--no-progress", "--workload", "cnn-concat", "-o", "", "--parallel", "-5"},
			"subarena: --parallel -5: want 0 (one cell per CPU) or more"},
	} {
		r := runClean(t, c.args...)
		require.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		require.Empty(t, r.stdout, "%v: the matrix ran", c.args)
		require.Equal(t, c.says, errLine(t, r))
	}
	_, err := os.Stat(file)
	require.NoError(t, err)
}
