package tracefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/internal/tracejson"
	"github.com/subarena/subarena/trace/minimalloc"
)

// Load reads the trace file at path in any format Read understands; the trace of a CSV
// or ggml file is named after the file (its base name without extension).
func Load(path string) (*trace.Trace, error) {
	t, _, err := load(path)
	return t, err
}

// LoadProgram is Load followed by Resolve, at the cost of Load alone: validating a
// trace resolves it, and the Program that validation built is the one returned.
func LoadProgram(path string) (*trace.Program, error) {
	_, p, err := load(path)
	return p, err
}

func load(path string) (*trace.Trace, *trace.Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(f, baseName(path))
}

// Read reads one trace and detects its format by content, not by name (see Detect):
//
//   - a JSON object whose "format" is "subarena-trace/v1": parsed as is (trace.Parse);
//   - a JSON object whose "format" is "ggml-alloc-trace/1": a ggml graph-allocator trace
//     (ggmltrace.Import);
//   - text whose first line is a MiniMalloc CSV header (columns id, lower, upper and
//     size, or their legacy names): a MiniMalloc CSV (minimalloc.Import).
//
// Anything else is rejected with an error matching trace.ErrUnknownFormat that says what
// the input looks like instead. name names the imported trace (a subarena trace keeps its
// own name). Every result is validated and normalized.
func Read(r io.Reader, name string) (*trace.Trace, error) {
	t, _, err := read(r, name)
	return t, err
}

// ReadProgram is Read followed by Resolve, at the cost of Read alone (see LoadProgram).
func ReadProgram(r io.Reader, name string) (*trace.Program, error) {
	_, p, err := read(r, name)
	return p, err
}

func read(r io.Reader, name string) (*trace.Trace, *trace.Program, error) {
	data, format, err := ReadDocument(r)
	if err != nil {
		return nil, nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	return parse(data, format, name)
}

// parse parses or imports data, a document in format, naming it name when its format
// has no name of its own.
func parse(data []byte, format, name string) (*trace.Trace, *trace.Program, error) {
	var (
		p   *trace.Program
		err error
	)
	switch format {
	case ggmltrace.Format:
		p, err = ggmltrace.ImportProgram(data, name)
	case minimalloc.Format:
		var m *minimalloc.CSV
		if m, err = minimalloc.Parse(data); err == nil {
			p, err = m.Program(name)
		}
	default:
		p, err = trace.ParseProgram(data)
	}
	if err != nil {
		return nil, nil, err
	}
	return p.Trace, p, nil
}

// headSize is how many bytes of a document ReadDocument reads before it decides whether
// the rest is worth reading: detection needs no more for binary data, text that is no
// MiniMalloc CSV, or a JSON object whose "format" key comes first.
const headSize = 64 << 10

// ReadDocument reads one document from r and detects its format (see Detect), refusing
// early what it can: it first reads at most 64 KiB, and input that is binary, text that
// is no MiniMalloc CSV, or a JSON object that is malformed or names another format within
// them is refused without reading further. Otherwise it reads the rest, up to
// trace.MaxDocumentSize bytes; a longer input is refused with an error matching
// trace.ErrLimit. So an endless input (/dev/zero, /dev/urandom, a pipe that never ends)
// costs bounded time and memory. A read error is returned as is.
func ReadDocument(r io.Reader) (data []byte, format string, err error) {
	head := make([]byte, headSize)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The whole input is in head.
		format, err := Detect(head)
		return head, format, err
	case err != nil:
		return nil, "", err
	}
	if format, err = detectHead(head); err != nil {
		return nil, "", err
	}
	if data, err = trace.ReadDocumentAfter(head, r); err != nil {
		return nil, "", err
	}
	if format == "" {
		format, err = Detect(data)
	}
	return data, format, err
}

// detectHead is Detect for the first bytes of a longer input: the format, "" when the
// head cannot tell (a JSON object whose "format" key lies beyond it, white space), or the
// error Detect would give the whole input.
func detectHead(head []byte) (string, error) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return "", nil
	case trimmed[0] == '{' && controlBytes(head):
		// Random bytes that start with a brace.
		return "", trace.UnknownFormat(fmt.Sprintf("binary data (not text, in the first %d bytes)", len(head)))
	case trimmed[0] == '{':
		format, err := detectJSON(head)
		if err != nil && !errors.Is(err, trace.ErrSyntax) {
			return "", err
		}
		if off, bad := tracejson.SyntaxOffset(head); bad && off == int64(len(head)) {
			return format, nil // well-formed so far
		}
		if err == nil {
			// Malformed within the head, after the "format" key: the error reading
			// the whole input would give.
			_, _, err = parse(head, format, "")
		}
		return "", err
	case looksBinary(head):
		return "", trace.UnknownFormat(fmt.Sprintf("binary data (not text, in the first %d bytes)", len(head)))
	}
	return Detect(head)
}

// Detect tells which format data is in, by content: trace.Format (subarena-trace/v1),
// ggmltrace.Format (ggml-alloc-trace/1) or minimalloc.Format, as Read describes them; a
// leading UTF-8 byte order mark is skipped. It reads no further than it needs: a JSON
// object up to its "format" key, a CSV up to the end of its header.
//
// Input of no format Read understands gets an error matching trace.ErrUnknownFormat that
// says what the input looks like: empty, white space only, binary, a JSON array, text
// that is no MiniMalloc header, a JSON object without a "format" key (also
// trace.ErrMissingKey). A JSON object whose "format" names another format or version gets
// one matching both trace.ErrUnknownFormat and trace.ErrFormat, naming the formats this
// package reads. A JSON object that is malformed before its "format" key gets the
// *trace.StepError trace.Parse would give (trace.ErrSyntax, with its line and column).
func Detect(data []byte) (string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	first, _, _ := bytes.Cut(data, []byte("\n"))
	_, missing := minimalloc.Header(string(bytes.TrimSuffix(first, []byte("\r"))))
	switch {
	case len(data) == 0:
		return "", trace.UnknownFormat("the input is empty")
	case len(trimmed) == 0:
		return "", trace.UnknownFormat(fmt.Sprintf("the input is only white space (%d bytes)", len(data)))
	case trimmed[0] == '{':
		return detectJSON(data)
	case len(missing) == 0:
		return minimalloc.Format, nil
	case looksBinary(data):
		return "", trace.UnknownFormat(fmt.Sprintf("binary data (%d bytes, not text)", len(data)))
	case trimmed[0] == '[':
		if json.Valid(trimmed) {
			return "", trace.UnknownFormat("a JSON array, not an object")
		}
		return "", trace.UnknownFormat(fmt.Sprintf("text starting with %s", firstLine(trimmed)))
	}
	return detectCSV(data)
}

// knownFormats is what the errors of Detect name as the formats Read understands.
var knownFormats = trace.Format + " and " + ggmltrace.Format

func detectJSON(data []byte) (string, error) {
	format, err := trace.FormatKey(data)
	switch {
	case err != nil:
		return "", err
	case format == trace.Format || format == ggmltrace.Format:
		return format, nil
	case format == trace.PlanFormat:
		return "", trace.UnsupportedFormat(fmt.Sprintf("trace: unsupported format %q: a plan, not a trace; this reader knows %s",
			format, knownFormats))
	}
	return "", trace.UnsupportedFormat(fmt.Sprintf("trace: unsupported format %q; this reader knows %s", format, knownFormats))
}

// detectCSV accepts text whose first line is a MiniMalloc header.
func detectCSV(data []byte) (string, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		rest := bytes.TrimLeft(data, " \t\r\n")
		next, _, _ := bytes.Cut(rest, []byte("\n"))
		if _, missing := minimalloc.Header(string(bytes.TrimSuffix(next, []byte("\r")))); len(missing) == 0 {
			return "", trace.UnknownFormat("a MiniMalloc CSV header after blank lines (the header must be the first line)")
		}
		return "", trace.UnknownFormat(fmt.Sprintf("text starting with a blank line, then %s", firstLine(rest)))
	}
	if cols, missing := minimalloc.Header(string(line)); cols > 1 {
		return "", trace.UnknownFormat(fmt.Sprintf("a CSV whose header %s lacks MiniMalloc's column%s %s",
			firstLine(line), plural(len(missing)), strings.Join(missing, ", ")), trace.ErrMissingKey)
	}
	return "", trace.UnknownFormat(fmt.Sprintf("text starting with %s", firstLine(data)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// firstLine quotes the first line of data, shortened to 40 characters.
func firstLine(data []byte) string {
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	more := len(bytes.TrimSpace(rest)) > 0
	r := []rune(string(line))
	if len(r) > 40 {
		r, more = r[:40], true
	}
	s := strconv.Quote(string(r))
	if more {
		s += "..."
	}
	return s
}

// looksBinary reports whether the first 4 KiB of data hold a byte no text
// holds: a control character other than white space, DEL, or invalid
// UTF-8 (a rune cut off by the 4 KiB end does not count).
func looksBinary(data []byte) bool {
	head := data[:min(len(data), 4096)]
	return nonText(head, len(head) == len(data), true)
}

// controlBytes reports whether data, the start of a longer input, holds a
// byte no JSON document may hold: a control character other than white
// space, or invalid UTF-8 (random bytes that happen to start with a
// brace). DEL may stand in a JSON string.
func controlBytes(data []byte) bool { return nonText(data, false, false) }

// nonText reports whether head holds a control character other than tab,
// newline and carriage return (DEL too, with del), or invalid UTF-8; a rune
// cut off at head's end counts only when head is the whole input.
func nonText(head []byte, whole, del bool) bool {
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			if whole || utf8.FullRune(head[i:]) {
				return true
			}
			return false // a rune cut off by the end of the head
		}
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (del && r == 0x7f) {
			return true
		}
		i += n
	}
	return false
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
