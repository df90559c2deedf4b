package replay

import (
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace/minimalloc"
)

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../../testdata"

// sharedFiles returns the files matching pattern under sharedData (testutil.Glob).
func sharedFiles(t *testing.T, pattern string) []string {
	t.Helper()
	return testutil.Glob(t, sharedData, pattern)
}

// readMiniMalloc returns the MiniMalloc instance in the CSV file at path, failing the
// test when it cannot be read or parsed.
func readMiniMalloc(t *testing.T, path string) *minimalloc.CSV {
	t.Helper()
	mm, err := minimalloc.Parse(testutil.Read(t, ".", path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return mm
}
