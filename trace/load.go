package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Load reads the trace file at path in any format Read understands; the trace of a CSV
// or ggml file is named after the file (its base name without extension).
func Load(path string) (*Trace, error) {
	t, _, err := load(path)
	return t, err
}

// LoadProgram is Load followed by Resolve, at the cost of Load alone: validating a
// trace resolves it, and the Program that validation built is the one returned.
func LoadProgram(path string) (*Program, error) {
	_, p, err := load(path)
	return p, err
}

func load(path string) (*Trace, *Program, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return read(f, baseName(path))
}

// MiniMallocFormat is the name Detect gives a MiniMalloc CSV.
const MiniMallocFormat = "minimalloc-csv"

// Read reads one trace and detects its format by content, not by name (see Detect):
//
//   - a JSON object whose "format" is "subarena-trace/v1": parsed as is (Parse);
//   - a JSON object whose "format" is "ggml-alloc-trace/1": a ggml graph-allocator trace
//     (ImportGGML);
//   - text whose first line is a MiniMalloc CSV header (columns id, lower, upper and
//     size, or their legacy names): a MiniMalloc CSV (ImportMiniMalloc).
//
// Anything else is rejected with an error matching ErrUnknownFormat that says what the
// input looks like instead. name names the imported trace (a subarena trace keeps its own
// name). Every result is validated and normalized.
func Read(r io.Reader, name string) (*Trace, error) {
	t, _, err := read(r, name)
	return t, err
}

// ReadProgram is Read followed by Resolve, at the cost of Read alone (see LoadProgram).
func ReadProgram(r io.Reader, name string) (*Program, error) {
	_, p, err := read(r, name)
	return p, err
}

func read(r io.Reader, name string) (*Trace, *Program, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("trace %s: %w", name, err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	format, err := Detect(data)
	if err != nil {
		return nil, nil, err
	}
	switch format {
	case GGMLFormat:
		return importGGML(data, name)
	case MiniMallocFormat:
		m, err := ParseMiniMalloc(data)
		if err != nil {
			return nil, nil, err
		}
		return m.program(name)
	default:
		return parse(data)
	}
}

// Detect tells which format data is in, by content: Format (subarena-trace/v1),
// GGMLFormat (ggml-alloc-trace/1) or MiniMallocFormat, as Read describes them; a leading
// UTF-8 byte order mark is skipped. It reads no further than it needs: a JSON object up
// to its "format" key, a CSV up to the end of its header.
//
// Input of no format Read understands gets an error matching ErrUnknownFormat that says
// what the input looks like: empty, white space only, binary, a JSON array, text that is
// no MiniMalloc header, a JSON object without a "format" key (also ErrMissingKey). A JSON
// object whose "format" names another format or version gets one matching both
// ErrUnknownFormat and ErrFormat, naming the formats this package reads. A JSON object
// that is malformed before its "format" key gets the *StepError Parse would give
// (ErrSyntax, with its line and column).
func Detect(data []byte) (string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	first, _, _ := bytes.Cut(data, []byte("\n"))
	_, missing := miniMallocHeader(string(bytes.TrimSuffix(first, []byte("\r"))))
	switch {
	case len(data) == 0:
		return "", unknownFormat("the input is empty")
	case len(trimmed) == 0:
		return "", unknownFormat(fmt.Sprintf("the input is only white space (%d bytes)", len(data)))
	case trimmed[0] == '{':
		return detectJSON(data)
	case len(missing) == 0:
		return MiniMallocFormat, nil
	case looksBinary(data):
		return "", unknownFormat(fmt.Sprintf("binary data (%d bytes, not text)", len(data)))
	case trimmed[0] == '[':
		if json.Valid(trimmed) {
			return "", unknownFormat("a JSON array, not an object")
		}
		return "", unknownFormat(fmt.Sprintf("text starting with %s", firstLine(trimmed)))
	}
	return detectCSV(data)
}

// knownFormats is what the errors of Detect name as the formats Read understands.
var knownFormats = Format + " and " + GGMLFormat

// formatError is an error of Detect: its text, and the sentinels it matches.
type formatError struct {
	msg string
	is  []error
}

func (e *formatError) Error() string   { return e.msg }
func (e *formatError) Unwrap() []error { return e.is }

// unknownFormat says what input of no known format looks like; also lists further
// sentinels the error matches.
func unknownFormat(what string, also ...error) error {
	return &formatError{msg: ErrUnknownFormat.Error() + ": " + what, is: append([]error{ErrUnknownFormat}, also...)}
}

// detectJSON finds the "format" of a JSON object.
func detectJSON(data []byte) (string, error) {
	format, raw, found, err := sniffFormat(data)
	switch {
	case err != nil:
		off, _ := errorOffset(err)
		se := at(-1, off, err)
		se.Line, se.Column = lineCol(data, off)
		return "", se
	case !found:
		return "", unknownFormat("a JSON object without a \"format\" key (a trace starts {\"format\": \""+Format+
			"\", ...)", ErrMissingKey)
	case raw != nil:
		return "", unknownFormat(fmt.Sprintf("a JSON object whose \"format\" is %s, not a string", kindOf(raw)), ErrFormat)
	case format == Format || format == GGMLFormat:
		return format, nil
	case format == PlanFormat:
		return "", &formatError{msg: fmt.Sprintf("trace: unsupported format %q: a plan, not a trace; this reader knows %s",
			format, knownFormats), is: []error{ErrUnknownFormat, ErrFormat}}
	}
	return "", &formatError{msg: fmt.Sprintf("trace: unsupported format %q; this reader knows %s", format, knownFormats),
		is: []error{ErrUnknownFormat, ErrFormat}}
}

// sniffFormat reads the keys of the JSON object data up to "format": its value if it
// is a string, else its raw value; found is false when the object has no such key. err
// is a *posError matching ErrSyntax when the object is malformed before that key.
func sniffFormat(data []byte) (format string, notString json.RawMessage, found bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return "", nil, false, jsonSyntax(data, 0, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, false, jsonSyntax(data, 0, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return "", nil, false, jsonSyntax(data, 0, err)
		}
		if key, _ := tok.(string); key == "format" {
			if s, err := jsonString(v); err == nil {
				return s, nil, true, nil
			}
			return "", v, true, nil
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return "", nil, false, jsonSyntax(data, 0, err)
	}
	return "", nil, false, nil
}

// detectCSV accepts text whose first line is a MiniMalloc header.
func detectCSV(data []byte) (string, error) {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(bytes.TrimSpace(line)) == 0 {
		rest := bytes.TrimLeft(data, " \t\r\n")
		next, _, _ := bytes.Cut(rest, []byte("\n"))
		if _, missing := miniMallocHeader(string(bytes.TrimSuffix(next, []byte("\r")))); len(missing) == 0 {
			return "", unknownFormat("a MiniMalloc CSV header after blank lines (the header must be the first line)")
		}
		return "", unknownFormat(fmt.Sprintf("text starting with a blank line, then %s", firstLine(rest)))
	}
	if cols, missing := miniMallocHeader(string(line)); cols > 1 {
		return "", unknownFormat(fmt.Sprintf("a CSV whose header %s lacks MiniMalloc's column%s %s",
			firstLine(line), plural(len(missing)), strings.Join(missing, ", ")), ErrMissingKey)
	}
	return "", unknownFormat(fmt.Sprintf("text starting with %s", firstLine(data)))
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

// looksBinary reports whether data is not text: invalid UTF-8 or a control character
// other than white space among its first 4096 bytes (a rune cut at that limit excepted).
func looksBinary(data []byte) bool {
	head := data[:min(len(data), 4096)]
	for i := 0; i < len(head); {
		r, n := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && n == 1 {
			return len(head) == len(data) || utf8.FullRune(head[i:])
		}
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
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
