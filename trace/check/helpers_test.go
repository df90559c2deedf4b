package check

import (
	"testing"

	"github.com/subarena/subarena/trace"
)

// The test helpers this package shares with package trace's tests, on the format's
// exported API.

func parseProgram(t *testing.T, doc string) *trace.Program {
	t.Helper()
	p, err := trace.ParseProgram([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
