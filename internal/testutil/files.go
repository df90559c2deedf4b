package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/subarena/subarena/internal/invariants"
)

// Glob returns the files matching pattern under dir; it fails the test when
// none match. Under the race detector it returns the first and last only.
func Glob(tb testing.TB, dir, pattern string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no files match %s under %s", pattern, dir)
	}
	if invariants.RaceEnabled && len(files) > 2 {
		files = []string{files[0], files[len(files)-1]}
	}
	return files
}

// Read returns the contents of the file rel under dir; it fails the test
// when the file cannot be read.
func Read(tb testing.TB, dir, rel string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Text returns the contents of the file at path (relative to the calling test's
// package) as a string, for a fixture a test package reads once into a variable; it
// panics when the file cannot be read.
func Text(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// Count returns how many random inputs a sweep runs: full in an ordinary run,
// reduced under -short or the race detector.
func Count(full, reduced int) int {
	if testing.Short() || invariants.RaceEnabled {
		return reduced
	}
	return full
}
