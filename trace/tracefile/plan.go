package tracefile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracejson"
	"github.com/subarena/subarena/trace/minimalloc"
)

// ReadPlan reads a plan in either form a plan comes in: a subarena-plan/v1 document, or a
// MiniMalloc CSV with an offset column (a MiniMalloc solution); name is used as the
// plan's trace name for a CSV.
func ReadPlan(r io.Reader, name string) (*trace.Plan, error) {
	data, err := ReadPlanDocument(r)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, err)
	}
	if looksJSON(data) {
		return trace.ParsePlan(data)
	}
	mm, err := minimalloc.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, err)
	}
	p, ok := mm.Plan(name)
	if !ok {
		return nil, fmt.Errorf("plan %s: %w: a MiniMalloc CSV plan needs an offset column", name, trace.ErrMissingKey)
	}
	return p, nil
}

// LoadPlan reads the plan file at path (see ReadPlan).
func LoadPlan(path string) (*trace.Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadPlan(f, baseName(path))
}

// ReadPlanDocument reads one plan document from r, as ReadDocument reads a trace: binary
// data is refused after the first 64 KiB (an error matching trace.ErrUnknownFormat), JSON
// malformed within them with ParsePlan's error (trace.ErrSyntax), and any input above
// trace.MaxDocumentSize once it passes the limit (trace.ErrLimit).
func ReadPlanDocument(r io.Reader) ([]byte, error) {
	head := make([]byte, headSize)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return head, nil
	case err != nil:
		return nil, err
	case looksJSON(head) && controlBytes(head):
		return nil, trace.UnknownFormat(fmt.Sprintf("binary data (not text, in the first %d bytes)", len(head)))
	case looksJSON(head):
		if off, bad := tracejson.SyntaxOffset(head); bad && off < int64(len(head)) {
			// Malformed within the first bytes: the error parsing the whole
			// input would give, without reading it.
			if _, err := trace.ParsePlan(head); err != nil {
				return nil, err
			}
		}
	case looksBinary(head):
		return nil, trace.UnknownFormat(fmt.Sprintf("binary data (not text, in the first %d bytes)", len(head)))
	}
	return trace.ReadDocumentAfter(head, r)
}
