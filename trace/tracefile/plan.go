package tracefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/textpos"
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
		if off, bad := textpos.SyntaxOffset(head); bad && off < int64(len(head)) {
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

// controlBytes reports whether data holds a byte no JSON document may hold: a control
// character other than white space, or invalid UTF-8 (random bytes that happen to start
// with a brace).
func controlBytes(data []byte) bool {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 && (utf8.FullRune(data[i:]) || i+n < len(data)) {
			return true
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return true
		}
		i += n
	}
	return false
}
