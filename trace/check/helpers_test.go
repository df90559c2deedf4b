package check

import (
	"testing"

	"github.com/subarena/subarena/trace"

	"github.com/subarena/subarena/trace/internal/tracetest"
)

// The test helpers this package shares with package trace's tests, on the format's
// exported API.

func parseProgram(t *testing.T, doc string) *trace.Program {
	t.Helper()
	tr, err := trace.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tracetest.Resolve(t, tr)
}
