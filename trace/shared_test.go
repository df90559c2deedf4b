package trace

import (
	"bytes"
	"path/filepath"
	"testing"
)

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../testdata"

// sharedFiles returns the files matching pattern under sharedData; it fails the test when
// none match. Under the race detector it returns the first and last only.
func sharedFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(sharedData, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s under %s", pattern, sharedData)
	}
	if raceEnabled && len(files) > 2 {
		files = []string{files[0], files[len(files)-1]}
	}
	return files
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
