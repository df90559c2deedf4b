package tracefile_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/ggmltrace"
	"github.com/subarena/subarena/trace/minimalloc"
	"github.com/subarena/subarena/trace/tracefile"
)

// hostileInputs are inputs a user may feed any command by mistake, with the sentinels
// Read's error must match and a phrase it must contain.
var hostileInputs = []struct {
	name, in string
	is       []error
	says     string
}{
	{"empty", "", []error{trace.ErrUnknownFormat}, "the input is empty"},
	{"white space", " \n\t\r\n  ", []error{trace.ErrUnknownFormat}, "only white space (7 bytes)"},
	{"json array", "[1,2,3]", []error{trace.ErrUnknownFormat}, "a JSON array"},
	{"random bytes", string(randomBytes(512)), []error{trace.ErrUnknownFormat}, "binary data (512 bytes"},
	{"nul bytes", "id\x00lower", []error{trace.ErrUnknownFormat}, "binary data"},
	{"empty object", "{}", []error{trace.ErrUnknownFormat, trace.ErrMissingKey}, `a JSON object without a "format" key`},
	{"object without format", `{"engines": ["c"], "steps": []}`, []error{trace.ErrUnknownFormat, trace.ErrMissingKey},
		`without a "format" key (a trace starts {"format": "subarena-trace/v1"`},
	{"format not a string", `{"format": 1}`, []error{trace.ErrUnknownFormat, trace.ErrFormat}, `"format" is the number 1, not a string`},
	{"ggml version 2", strings.Replace(ggmlDoc, ggmltrace.Format, "ggml-alloc-trace/2", 1), []error{trace.ErrUnknownFormat, trace.ErrFormat},
		`unsupported format "ggml-alloc-trace/2"; this reader knows subarena-trace/v1 and ggml-alloc-trace/1`},
	{"trace version 2", `{"format": "subarena-trace/v2", "engines": ["c"], "steps": []}`, []error{trace.ErrUnknownFormat, trace.ErrFormat},
		`unsupported format "subarena-trace/v2"; this reader knows subarena-trace/v1 and ggml-alloc-trace/1`},
	{"a plan", `{"format": "subarena-plan/v1", "trace": "x", "size": 0, "offsets": {}}`, []error{trace.ErrUnknownFormat, trace.ErrFormat},
		`unsupported format "subarena-plan/v1": a plan, not a trace`},
	{"truncated trace", header + `{"alloc": "a", "si`, []error{trace.ErrSyntax},
		fmt.Sprintf("line 1, column %d: syntax: unexpected end of JSON input", len(header)+len(`{"alloc": "a", "si`)+1)},
	{"truncated before format", "{\n  \"name\": \"x\",\n  \"steps\": [", []error{trace.ErrSyntax}, "line 3, column 13: syntax"},
	{"truncated ggml", ggmlDoc[:400], []error{trace.ErrSyntax}, "trace: malformed document: ggml: line 3, column 77: unexpected end of JSON input"},
	{"huge integer", header + `{"alloc": "a", "size": 99999999999999999999}]}`, []error{trace.ErrOverflow}, "does not fit int64"},
	{"huge float", header + `{"alloc": "a", "size": 1e400}]}`, []error{trace.ErrSyntax}, "the number 1e400 where an integer is required"},
	{"huge ggml ne", strings.Replace(ggmlDoc, `"ne": [8, 2, 1, 1]`, `"ne": [8e40, 2, 1, 1]`, 1), []error{trace.ErrSyntax},
		"line 3, column"},
	{"huge cost", header + `{"op": "a", "cost": 9223372036854775807}, {"op": "b", "engine": "c"}]}`, []error{trace.ErrOverflow},
		"beyond int64 time"},
	{"plain text", "hello, world\nsecond line\n", []error{trace.ErrUnknownFormat}, `a CSV whose header "hello, world" lacks MiniMalloc's columns id, lower, upper, size`},
	{"one word", "hello\n", []error{trace.ErrUnknownFormat}, `text starting with "hello"`},
	{"csv header after a blank line", "\nid,lower,upper,size\na,0,1,1\n", []error{trace.ErrUnknownFormat}, "header after blank lines"},
	{"csv missing a column", "id,lower,size\na,0,1\n", []error{trace.ErrUnknownFormat, trace.ErrMissingKey}, "lacks MiniMalloc's column upper"},
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	b[0] = 0x9c // not '{', not text
	return b
}

// TestReadHostile: input of no known format, or of another version, says what it is
// not and what it looks like; malformed JSON names its line and column; nothing panics.
func TestReadHostile(t *testing.T) {
	for _, c := range hostileInputs {
		t.Run(c.name, func(t *testing.T) {
			var (
				tr  *trace.Trace
				err error
			)
			require.NotPanics(t, func() { tr, err = tracefile.Read(strings.NewReader(c.in), "hostile") })
			require.Error(t, err, "accepted as %+v", tr)
			for _, s := range c.is {
				require.ErrorIs(t, err, s)
			}
			require.Contains(t, err.Error(), c.says)
			require.NotContains(t, err.Error(), "no header row")
			require.NotContains(t, err.Error(), "unknown key")
		})
	}
}

// TestDetect: Detect names the format of each kind of valid input, BOM or not.
func TestDetect(t *testing.T) {
	for in, want := range map[string]string{
		header + `]}`:                                   trace.Format,
		"\xef\xbb\xbf  \n" + header + `]}`:              trace.Format,
		ggmlDoc:                                         ggmltrace.Format,
		"id,lower,upper,size\na,0,1,1\n":                minimalloc.Format,
		"buffer,start,end,size\r\n":                     minimalloc.Format,
		"\xef\xbb\xbfid,lower,upper,size,hint,offset\n": minimalloc.Format,
		"id,lower,upper,size\n\xff,0,1,1\n":             minimalloc.Format, // the CSV reader reports the bad byte
	} {
		got, err := tracefile.Detect([]byte(in))
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	_, err := tracefile.Read(strings.NewReader("id,lower,upper,size\na,0,1,1\n\xff,0,1,1\n"), "x")
	require.ErrorIs(t, err, trace.ErrSyntax)
	require.Contains(t, err.Error(), "trace: malformed document: minimalloc: line 3: invalid UTF-8")
}

// TestReadNeverPanics: truncations and byte flips of valid documents of every format
// are read without a panic, and every error matches a sentinel.
func TestReadNeverPanics(t *testing.T) {
	docs := []string{header + `{"alloc": "a", "size": 64}, {"op": "o", "writes": ["a"], "cost": 3}, {"release": "a"}]}`,
		ggmlDoc, "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n"}
	all := append([]error{trace.ErrUnknownFormat, trace.ErrPlacement}, sentinels...)
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range docs {
		for n := 0; n <= len(d); n += max(1, len(d)/97) {
			for _, in := range [][]byte{[]byte(d[:n]), flip(r, []byte(d))} {
				var err error
				require.NotPanics(t, func() { _, err = tracefile.Read(bytes.NewReader(in), "x") }, "%q", in)
				if err == nil {
					continue
				}
				matched := false
				for _, s := range all {
					matched = matched || errors.Is(err, s)
				}
				require.True(t, matched, "%q: %v matches no sentinel", in, err)
			}
		}
	}
}

func flip(r *rand.Rand, b []byte) []byte {
	b = bytes.Clone(b)
	b[r.IntN(len(b))] = byte(r.UintN(256))
	return b
}

// sentinels are package trace's sentinels of bad input (its errors.go lists the same).
var sentinels = []error{trace.ErrSyntax, trace.ErrFormat, trace.ErrUnknownFormat, trace.ErrUnknownKey,
	trace.ErrMissingKey, trace.ErrStepKind, trace.ErrInvalidName, trace.ErrUnknownName, trace.ErrDuplicateName,
	trace.ErrUseAfterRelease, trace.ErrOutOfBounds, trace.ErrShape, trace.ErrInvalidSize, trace.ErrInvalidElem,
	trace.ErrInvalidCost, trace.ErrInvalidGranule, trace.ErrNoEngines, trace.ErrWaitOrder, trace.ErrExternal,
	trace.ErrOverflow}
