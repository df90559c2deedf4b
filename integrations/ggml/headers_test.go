package ggml_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeadersMatchOllama checks that the headers in
// internal/third_party/ggml/include are the ones of the ggml the module links:
// ollama's vendored copy.
func TestHeadersMatchOllama(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("github.com/ollama/ollama is not in the module cache")
	}
	for _, name := range []string{"ggml.h", "ggml-alloc.h", "ggml-backend.h", "ggml-cpu.h", "../LICENSE"} {
		want, err := os.ReadFile(filepath.Join(dir, "ml/backend/ggml/ggml/include", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("internal/third_party/ggml/include", filepath.Base(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("internal/third_party/ggml/include/%s differs from ollama's", filepath.Base(name))
		}
	}
}
