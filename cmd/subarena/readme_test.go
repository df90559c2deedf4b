package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestREADMETestCommands: README's test section says that go test ./... stops at the
// nested modules and gives each one's own command, for every module under
// integrations/; and it says that "-" reads standard input and what bench --parallel
// takes.
func TestREADMETestCommands(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(data)
	mods, err := filepath.Glob("../../integrations/*/go.mod")
	require.NoError(t, err)
	require.NotEmpty(t, mods)
	for _, m := range mods {
		name := filepath.Base(filepath.Dir(m))
		require.Contains(t, readme, "(cd integrations/"+name+" && go test", "README gives no test command for integrations/%s", name)
	}
	require.Contains(t, readme, "This runs the root module only")
	for _, says := range []string{"An input path `-`", "`bench --parallel N` takes N ≥ 0"} {
		require.True(t, strings.Contains(readme, says), "README lacks %q", says)
	}
}
