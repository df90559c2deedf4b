package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Load reads the trace file at path in any format Read understands; the trace of a CSV
// or ggml file is named after the file (its base name without extension).
func Load(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, baseName(path))
}

// Read reads one trace and detects its format by content, not by name:
//
//   - a JSON object whose "format" is "subarena-trace/v1": parsed as is (Parse);
//   - a JSON object whose "format" is "ggml-alloc-trace/1": a ggml graph-allocator trace
//     (ImportGGML);
//   - anything else is read as a MiniMalloc CSV (ImportMiniMalloc).
//
// name names the imported trace (a subarena trace keeps its own name). Every result is
// validated and normalized.
func Read(r io.Reader, name string) (*Trace, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", name, err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !looksJSON(data) {
		return ImportMiniMalloc(data, name)
	}
	var head struct {
		Format json.RawMessage `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, &StepError{Index: -1, Rule: RuleSyntax, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
	}
	var format string
	if head.Format != nil {
		format, _ = jsonString(head.Format)
	}
	switch format {
	case GGMLFormat:
		return ImportGGML(data, name)
	default:
		// Parse reports a missing or wrong format precisely.
		return Parse(data)
	}
}

// looksJSON reports whether data starts, after an optional BOM and white space, with '{'.
func looksJSON(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

func baseName(path string) string {
	b := filepath.Base(path)
	return strings.TrimSuffix(b, filepath.Ext(b))
}
