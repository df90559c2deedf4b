package trace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileInputs are inputs a user may feed any command by mistake, with the sentinels
// Read's error must match and a phrase it must contain.
var hostileInputs = []struct {
	name, in string
	is       []error
	says     string
}{
	{"empty", "", []error{ErrUnknownFormat}, "the input is empty"},
	{"white space", " \n\t\r\n  ", []error{ErrUnknownFormat}, "only white space (7 bytes)"},
	{"json array", "[1,2,3]", []error{ErrUnknownFormat}, "a JSON array"},
	{"random bytes", string(randomBytes(512)), []error{ErrUnknownFormat}, "binary data (512 bytes"},
	{"nul bytes", "id\x00lower", []error{ErrUnknownFormat}, "binary data"},
	{"empty object", "{}", []error{ErrUnknownFormat, ErrMissingKey}, `a JSON object without a "format" key`},
	{"object without format", `{"engines": ["c"], "steps": []}`, []error{ErrUnknownFormat, ErrMissingKey},
		`without a "format" key (a trace starts {"format": "subarena-trace/v1"`},
	{"format not a string", `{"format": 1}`, []error{ErrUnknownFormat, ErrFormat}, `"format" is the number 1, not a string`},
	{"ggml version 2", strings.Replace(ggmlDoc, GGMLFormat, "ggml-alloc-trace/2", 1), []error{ErrUnknownFormat, ErrFormat},
		`unsupported format "ggml-alloc-trace/2"; this reader knows subarena-trace/v1 and ggml-alloc-trace/1`},
	{"trace version 2", `{"format": "subarena-trace/v2", "engines": ["c"], "steps": []}`, []error{ErrUnknownFormat, ErrFormat},
		`unsupported format "subarena-trace/v2"; this reader knows subarena-trace/v1 and ggml-alloc-trace/1`},
	{"a plan", `{"format": "subarena-plan/v1", "trace": "x", "size": 0, "offsets": {}}`, []error{ErrUnknownFormat, ErrFormat},
		`unsupported format "subarena-plan/v1": a plan, not a trace`},
	{"truncated trace", header + `{"alloc": "a", "si`, []error{ErrSyntax},
		fmt.Sprintf("line 1, column %d: syntax: unexpected end of JSON input", len(header)+len(`{"alloc": "a", "si`)+1)},
	{"truncated before format", "{\n  \"name\": \"x\",\n  \"steps\": [", []error{ErrSyntax}, "line 3, column 13: syntax"},
	{"truncated ggml", ggmlDoc[:400], []error{ErrSyntax}, "trace: malformed document: ggml: line 3, column 77: unexpected end of JSON input"},
	{"huge integer", header + `{"alloc": "a", "size": 99999999999999999999}]}`, []error{ErrOverflow}, "does not fit int64"},
	{"huge float", header + `{"alloc": "a", "size": 1e400}]}`, []error{ErrSyntax}, "the number 1e400 where an integer is required"},
	{"huge ggml ne", strings.Replace(ggmlDoc, `"ne": [8, 2, 1, 1]`, `"ne": [8e40, 2, 1, 1]`, 1), []error{ErrSyntax},
		"line 3, column"},
	{"huge cost", header + `{"op": "a", "cost": 9223372036854775807}, {"op": "b", "engine": "c"}]}`, []error{ErrOverflow},
		"beyond int64 time"},
	{"plain text", "hello, world\nsecond line\n", []error{ErrUnknownFormat}, `a CSV whose header "hello, world" lacks MiniMalloc's columns id, lower, upper, size`},
	{"one word", "hello\n", []error{ErrUnknownFormat}, `text starting with "hello"`},
	{"csv header after a blank line", "\nid,lower,upper,size\na,0,1,1\n", []error{ErrUnknownFormat}, "header after blank lines"},
	{"csv missing a column", "id,lower,size\na,0,1\n", []error{ErrUnknownFormat, ErrMissingKey}, "lacks MiniMalloc's column upper"},
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
				tr  *Trace
				err error
			)
			require.NotPanics(t, func() { tr, err = Read(strings.NewReader(c.in), "hostile") })
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
		header + `]}`:                                   Format,
		"\xef\xbb\xbf  \n" + header + `]}`:              Format,
		ggmlDoc:                                         GGMLFormat,
		"id,lower,upper,size\na,0,1,1\n":                MiniMallocFormat,
		"buffer,start,end,size\r\n":                     MiniMallocFormat,
		"\xef\xbb\xbfid,lower,upper,size,hint,offset\n": MiniMallocFormat,
		"id,lower,upper,size\n\xff,0,1,1\n":             MiniMallocFormat, // the CSV reader reports the bad byte
	} {
		got, err := Detect([]byte(in))
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	_, err := Read(strings.NewReader("id,lower,upper,size\na,0,1,1\n\xff,0,1,1\n"), "x")
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), "trace: malformed document: minimalloc: line 3: invalid UTF-8")
}

// TestJSONErrorPositions: errors in a document's text carry the line and column of the
// offending spot, in the message and in StepError.Line and Column; errors of meaning
// carry the position of their step in the fields.
func TestJSONErrorPositions(t *testing.T) {
	doc := func(steps string) string {
		return "{\"format\": \"subarena-trace/v1\",\n \"engines\": [\"c\"],\n \"steps\": [\n" + steps + "]}"
	}
	cases := []struct {
		name, doc  string
		is         error
		line, col  int
		says       string
		noPosition bool // Error leaves the position out (an error of meaning)
	}{
		{"bad token", doc(`  {"alloc": "a" "size": 1}`), ErrSyntax, 4, 17, `line 4, column 17: syntax: value of "steps": invalid character`, false},
		{"unexpected end", "{\"format\": \"subarena-trace/v1\",\n \"engines\": [", ErrSyntax, 2, 14, "line 2, column 14: syntax: unexpected end of JSON input", false},
		{"trailing data", doc(``) + "\n x", ErrSyntax, 5, 2, "line 5, column 2: syntax: trailing data", false},
		{"wrong type", doc(`  {"alloc": "a", "size": "big"}`), ErrSyntax, 4, 26, `line 4, column 26: step 0: syntax: size: a string where an integer is required`, false},
		{"unknown key", doc("  {\"alloc\": \"a\", \"size\": 1},\n  {\"alloc\": \"b\", \"sise\": 1}"), ErrUnknownKey, 5, 18, `line 5, column 18: step 1: unknown key: alloc step: "sise"`, false},
		{"duplicate key", doc(`  {"alloc": "a", "size": 1, "size": 2}`), ErrSyntax, 4, 29, `line 4, column 29: step 0: syntax: duplicate key "size"`, false},
		{"missing key", doc("  {\"op\": \"o\"},\n  {\"view\": \"v\", \"of\": \"a\"}"), ErrMissingKey, 5, 3, "line 5, column 3: step 1: missing key", false},
		{"non-ASCII column", doc(`  {"alloc": "ä", "size": -1.5}`), ErrSyntax, 4, 26, "line 4, column 26", false},
		{"step of meaning", doc("  {\"alloc\": \"a\", \"size\": 1},\n  {\"release\": \"a\"},\n  {\"op\": \"o\", \"reads\": [\"a\"]}"),
			ErrUseAfterRelease, 6, 3, `trace: step 2: use after release: "a": buffer "a" was released`, true},
		{"tab counts one", "{\"format\":\t\t1}", ErrSyntax, 1, 13, "line 1, column 13", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			require.ErrorIs(t, err, c.is)
			var se *StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, [2]int{c.line, c.col}, [2]int{se.Line, se.Column}, "%v", err)
			require.Contains(t, err.Error(), c.says)
			if c.noPosition {
				require.NotContains(t, err.Error(), "line ")
			}
		})
	}
}

// TestScheduleOverflow: a trace whose ops could not all be scheduled within int64 time
// is rejected by Parse, which replay and plan both read through, exactly where the
// replay's own arithmetic would overflow: on one engine, after a sync, after a wait; ops of one
// huge cost each on two engines are fine.
func TestScheduleOverflow(t *testing.T) {
	const two = `{"format": "subarena-trace/v1", "engines": ["c", "d"], "steps": [`
	big := "9223372036854775807"
	for _, c := range []struct {
		name, doc string
		index     int // -1: accepted
	}{
		{"one engine", two + `{"op": "a", "cost": ` + big + `}, {"op": "b"}]}`, 1},
		{"after a sync", two + `{"op": "a", "cost": ` + big + `}, {"sync": "a"}, {"op": "b", "engine": "d"}]}`, 2},
		{"after a wait", two + `{"op": "a", "cost": ` + big + `}, {"op": "b", "engine": "d", "waits": ["a"]}]}`, 1},
		{"two engines", two + `{"op": "a", "cost": ` + big + `}, {"op": "b", "engine": "d", "cost": ` + big + `}]}`, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Parse([]byte(c.doc))
			if c.index < 0 {
				require.NoError(t, err)
				mustResolve(t, tr) // replay_test.go in trace/replay replays it
				return
			}
			require.ErrorIs(t, err, ErrOverflow)
			var se *StepError
			require.ErrorAs(t, err, &se)
			require.Equal(t, c.index, se.Index)
			require.Equal(t, "arithmetic overflow", se.Rule)
			require.Contains(t, err.Error(), "beyond int64 time")
			// The same trace built in memory: Resolve (so Validate, and every
			// command that reads it) rejects it at the same op.
			_, err = mustParseLoose(t, c.doc).Resolve()
			require.ErrorIs(t, err, ErrOverflow)
			require.ErrorAs(t, err, &se)
			require.Equal(t, c.index, se.Index)
		})
	}
}

// mustParseLoose decodes a document without the schedule check (as a Trace built in
// memory would be).
func mustParseLoose(t *testing.T, doc string) *Trace {
	t.Helper()
	tr, _, err := decode([]byte(doc))
	require.NoError(t, err)
	return tr
}

// TestReadNeverPanics: truncations and byte flips of valid documents of every format
// are read without a panic, and every error matches a sentinel.
func TestReadNeverPanics(t *testing.T) {
	docs := []string{header + `{"alloc": "a", "size": 64}, {"op": "o", "writes": ["a"], "cost": 3}, {"release": "a"}]}`,
		ggmlDoc, "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n"}
	all := append([]error{ErrUnknownFormat, ErrPlacement}, sentinels...)
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range docs {
		for n := 0; n <= len(d); n += max(1, len(d)/97) {
			for _, in := range [][]byte{[]byte(d[:n]), flip(r, []byte(d))} {
				var err error
				require.NotPanics(t, func() { _, err = Read(bytes.NewReader(in), "x") }, "%q", in)
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
