package tracefile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/subarena/subarena/trace"
)

// endless is an input that never ends: it repeats pattern after an optional prefix. It
// counts what was read, and fails a read past max bytes so that a reader that would read
// it whole ends with an error instead of running out of memory.
type endless struct {
	prefix, pattern []byte
	n, max          int64
}

// errReadTooFar is what endless returns past its max.
var errReadTooFar = errors.New("read past the bytes a reader should need")

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.max {
		return 0, errReadTooFar
	}
	for i := range p {
		if k := e.n + int64(i); k < int64(len(e.prefix)) {
			p[i] = e.prefix[k]
		} else {
			p[i] = e.pattern[(k-int64(len(e.prefix)))%int64(len(e.pattern))]
		}
	}
	e.n += int64(len(p))
	return len(p), nil
}

// TestEndlessInput: input that is no trace is refused after its first bytes, however
// long it goes on (/dev/zero, /dev/urandom, text that is no CSV, JSON malformed or of
// another format early on), by Read and ReadPlanDocument alike; the error says what the
// input looks like.
func TestEndlessInput(t *testing.T) {
	for _, c := range []struct {
		name            string
		prefix, pattern string
		err             error
		says            string
	}{
		{"zeros", "", "\x00", trace.ErrUnknownFormat, "binary data (not text, in the first 65536 bytes)"},
		{"random", "", "\x8f\x13\xfe\x00\xd1\x7f\x22", trace.ErrUnknownFormat, "binary data"},
		{"yes", "", "y\n", trace.ErrUnknownFormat, `text starting with "y"`},
		{"bad header", "id,lower,upper\n", "1,2,3\n", trace.ErrMissingKey, "lacks MiniMalloc's column size"},
		{"malformed JSON", `{"format": "subarena-trace/v1", "steps": [{]`, " ", trace.ErrSyntax, "line 1, column 44"},
		{"plan", `{"format": "subarena-plan/v1", "offsets": {`, `"a": 1, `, trace.ErrFormat, "a plan, not a trace"},
		{"JSON of braces", "", "{", trace.ErrSyntax, "line 1, column 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := &endless{prefix: []byte(c.prefix), pattern: []byte(c.pattern), max: 64 << 20}
			_, err := Read(in, "x")
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Read: %v, want %v saying %q", err, c.err, c.says)
			}
			if in.n > headSize {
				t.Fatalf("read %d bytes before refusing; %d tell", in.n, headSize)
			}
		})
	}
	in := &endless{pattern: []byte{0}, max: 64 << 20}
	if _, err := ReadPlanDocument(in); !errors.Is(err, trace.ErrUnknownFormat) || in.n > headSize {
		t.Fatalf("ReadPlanDocument of zeros: %v after %d bytes", err, in.n)
	}
	// Random bytes that happen to start with a brace (1 in 256 of /dev/urandom's
	// reads) are binary data all the same, and JSON malformed within the first bytes
	// is refused there with the parser's error: a plan is never read on.
	for _, c := range []struct {
		prefix, pattern string
		err             error
	}{
		{"{", "\x8f\x13\xfe\x00\xd1", trace.ErrUnknownFormat},
		{" \n{\x8f", "\x13\xfe\x00", trace.ErrUnknownFormat},
		{`{"offsets": {"a": 1}, "x": [`, "]", trace.ErrSyntax},
	} {
		in := &endless{prefix: []byte(c.prefix), pattern: []byte(c.pattern), max: 64 << 20}
		_, err := ReadPlanDocument(in)
		if !errors.Is(err, c.err) || in.n > headSize {
			t.Fatalf("ReadPlanDocument of %q then %q: %v after %d bytes, want %v", c.prefix, c.pattern, err, in.n, c.err)
		}
	}
}

// TestFormatKeyBeyondHead: a trace whose "format" key comes after 64 KiB of other keys is
// read whole and detected, like one whose key comes first.
func TestFormatKeyBeyondHead(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"steps": [`)
	for i := 0; b.Len() < 3*headSize; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"alloc": "b%d", "size": 256}, {"op": "o%d", "writes": ["b%d"]}, {"release": "b%d"}`, i, i, i, i)
	}
	b.WriteString(`], "engines": ["c"], "format": "subarena-trace/v1"}`)
	tr, err := Read(strings.NewReader(b.String()), "x")
	if err != nil || len(tr.Steps) < 3 {
		t.Fatalf("%v", err)
	}
}

// TestRandomBytesAfterBrace: /dev/urandom's first byte is a brace once in 256 reads;
// such input is binary data to Read as to ReadPlanDocument, refused after the first
// bytes.
func TestRandomBytesAfterBrace(t *testing.T) {
	for _, prefix := range []string{"{", "\t{\xfe"} {
		in := &endless{prefix: []byte(prefix), pattern: []byte("\x8f\x13\xfe\x00\xd1\x7f\x22"), max: 64 << 20}
		_, err := Read(in, "x")
		if !errors.Is(err, trace.ErrUnknownFormat) || !strings.Contains(err.Error(), "binary data") || in.n > headSize {
			t.Fatalf("Read of %q then random bytes: %v after %d bytes", prefix, err, in.n)
		}
	}
}
