package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// sharedData is the shared data directory relative to this package.
const sharedData = "../../shared/data"

// sharedFiles returns the files matching pattern under sharedData, skipping the test when
// the directory is absent. Under the race detector it returns the first and last only.
func sharedFiles(t *testing.T, pattern string) []string {
	t.Helper()
	if _, err := os.Stat(sharedData); err != nil {
		t.Skip("shared data directory absent")
	}
	files, err := filepath.Glob(filepath.Join(sharedData, pattern))
	if err != nil || len(files) == 0 {
		t.Skipf("no files match %s", pattern)
	}
	if raceEnabled && len(files) > 2 {
		files = []string{files[0], files[len(files)-1]}
	}
	return files
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
