package replay

import (
	"testing"

	"github.com/subarena/subarena/trace/internal/testfiles"
)

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../../testdata"

// sharedFiles returns the files matching pattern under sharedData (testfiles.Glob).
func sharedFiles(t *testing.T, pattern string) []string {
	t.Helper()
	return testfiles.Glob(t, sharedData, pattern)
}
