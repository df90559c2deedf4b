package trace

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustResolve(t testing.TB, tr *Trace) *Program {
	t.Helper()
	p, err := tr.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseProgram(t *testing.T, doc string) *Program {
	t.Helper()
	p, err := ParseProgram([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, path string) *Trace {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		var tr *Trace
		if tr, err = Parse(data); err == nil {
			return tr
		}
	}
	t.Fatalf("load %s: %v", path, err)
	return nil
}

func TestParseExample(t *testing.T) {
	tr := mustLoad(t, "testdata/split-qkv.json")
	if tr.Name != "split-qkv" || tr.Granule != 256 || len(tr.Engines) != 2 || len(tr.Steps) != 12 {
		t.Fatalf("unexpected trace header: %+v", tr)
	}
	p, err := tr.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Buffers) != 2 || len(p.Views) != 4 || len(p.Ops) != 4 {
		t.Fatalf("buffers %d views %d ops %d", len(p.Buffers), len(p.Views), len(p.Ops))
	}
	kt, _ := p.Lookup("kt")
	if got := strings.Join(p.Chain(kt), " -> "); got != "kt -> k -> qkv" {
		t.Fatalf("chain %q", got)
	}
	if l := p.Layout(kt); l.Offset != 512 {
		t.Fatalf("kt offset %d, want 512 (relative to qkv)", l.Offset)
	}
	// kt covers exactly k's bytes: 16 runs of 512 bytes at 512 + 1536 i.
	set, exact := p.Footprint(kt)
	if !exact || set.NumRuns() != 16 || set.Len() != 16*512 {
		t.Fatalf("kt footprint %v exact %v", set.String(), exact)
	}
	for i, r := range set.Runs() {
		if r.Lo != 512+1536*int64(i) || r.Hi != r.Lo+512 {
			t.Fatalf("run %d = %v", i, r)
		}
	}
	if p.Buffers[0].Release != 8 || p.Buffers[1].Release != 11 {
		t.Fatalf("release steps %d %d", p.Buffers[0].Release, p.Buffers[1].Release)
	}
	off := p.Ops[2]
	if off.Engine != 1 || len(off.Waits) != 1 || off.Waits[0] != 0 || off.Cost != 20 {
		t.Fatalf("offload_v resolved as %+v", off)
	}
}

// TestDefaults: leaving out granule, engine and cost gives the documented defaults, and
// the written form spells them out.
func TestDefaults(t *testing.T) {
	tr, err := Parse([]byte(`{"format": "subarena-trace/v1", "engines": ["e0", "e1"], "steps": [
		{"alloc": "a", "size": 10}, {"op": "o", "writes": ["a"]}, {"release": "a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Granule != DefaultGranule || tr.Steps[0].Engine != "e0" || tr.Steps[1].Engine != "e0" ||
		tr.Steps[1].Cost != DefaultCost {
		t.Fatalf("defaults not applied: %+v", tr)
	}
	if !strings.Contains(string(Marshal(tr)), `"cost": 1`) {
		t.Fatalf("written form lacks the cost:\n%s", Marshal(tr))
	}
}

const header = `{"format": "subarena-trace/v1", "name": "x", "engines": ["c", "d"], "steps": [`

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name  string
		doc   string
		want  error
		index int
		rule  string
	}{
		{"not json", `{"format": `, ErrSyntax, -1, "syntax"},
		{"trailing", header + `]} {}`, ErrSyntax, -1, "syntax"},
		{"bad utf8", header + `{"alloc": "a\xff", "size": 1}]}`, ErrSyntax, -1, "syntax"},
		{"format", `{"format": "subarena-trace/v2", "engines": ["c"], "steps": []}`, ErrFormat, -1, "format"},
		{"missing format", `{"engines": ["c"], "steps": []}`, ErrMissingKey, -1, "missing key"},
		{"unknown top key", `{"format": "subarena-trace/v1", "engines": ["c"], "steps": [], "x": 1}`, ErrUnknownKey, -1, "unknown key"},
		{"case differs", `{"format": "subarena-trace/v1", "Engines": ["c"], "steps": []}`, ErrUnknownKey, -1, "unknown key"},
		{"duplicate key", `{"format": "subarena-trace/v1", "engines": ["c"], "engines": ["d"], "steps": []}`, ErrSyntax, -1, "syntax"},
		{"no engines", `{"format": "subarena-trace/v1", "engines": [], "steps": []}`, ErrNoEngines, -1, "engines"},
		{"dup engine", `{"format": "subarena-trace/v1", "engines": ["c", "c"], "steps": []}`, ErrDuplicateName, -1, "duplicate engine"},
		{"granule", `{"format": "subarena-trace/v1", "granule": 48, "engines": ["c"], "steps": []}`, ErrInvalidGranule, -1, "granule must be a power of two"},
		{"granule null", `{"format": "subarena-trace/v1", "granule": null, "engines": ["c"], "steps": []}`, ErrSyntax, -1, "syntax"},
		{"two kinds", header + `{"alloc": "a", "view": "b", "size": 1}]}`, ErrStepKind, 0, "exactly one kind key"},
		{"no kind", header + `{"size": 1}]}`, ErrStepKind, 0, "exactly one kind key"},
		{"unknown step key", header + `{"alloc": "a", "size": 1, "strides": [1]}]}`, ErrUnknownKey, 0, "unknown key"},
		{"size 0", header + `{"alloc": "a", "size": 0}]}`, ErrInvalidSize, 0, "size must be > 0"},
		{"size float", header + `{"alloc": "a", "size": 1.5}]}`, ErrSyntax, 0, "syntax"},
		{"size huge", header + `{"alloc": "a", "size": 99999999999999999999}]}`, ErrOverflow, 0, "arithmetic overflow"},
		{"size missing", header + `{"alloc": "a"}]}`, ErrMissingKey, 0, "missing key"},
		{"shape w/o elem", header + `{"alloc": "a", "size": 4, "shape": [4]}]}`, ErrMissingKey, 0, "missing key"},
		{"alloc shape", header + `{"alloc": "a", "size": 4, "shape": [3], "elem": 1}]}`, ErrShape, 0, "shape × elem must equal size"},
		{"alloc shape overflow", header + `{"alloc": "a", "size": 4, "shape": [4294967296, 4294967296], "elem": 2}]}`, ErrOverflow, 0, "arithmetic overflow"},
		{"unknown engine", header + `{"alloc": "a", "size": 4, "engine": "x"}]}`, ErrUnknownName, 0, "unknown name"},
		{"dup buffer", header + `{"alloc": "a", "size": 4}, {"external": "a", "size": 4}]}`, ErrDuplicateName, 1, "duplicate name"},
		{"view unknown", header + `{"view": "v", "of": "z", "shape": [], "strides": [], "elem": 1}]}`, ErrUnknownName, 0, "unknown name"},
		{"view len", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "shape": [2], "strides": [], "elem": 1}]}`, ErrShape, 1, "shape/strides length mismatch"},
		{"view elem", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "shape": [2], "strides": [1], "elem": 0}]}`, ErrInvalidElem, 1, "elem must be > 0"},
		{"view outside", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "offset": 1, "shape": [2], "strides": [2], "elem": 2}]}`, ErrOutOfBounds, 1, "view outside its buffer"},
		{"view negative", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "offset": 0, "shape": [2], "strides": [-1], "elem": 1}]}`, ErrOutOfBounds, 1, "view outside its buffer"},
		{"view overflow", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "offset": 9223372036854775807, "shape": [2], "strides": [1], "elem": 1}]}`, ErrOverflow, 1, "arithmetic overflow"},
		{"view chain overflow", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "offset": 3, "shape": [], "strides": [], "elem": 1}, {"view": "w", "of": "v", "offset": 9223372036854775807, "shape": [], "strides": [], "elem": 1}]}`, ErrOverflow, 2, "arithmetic overflow"},
		{"dim negative", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "shape": [-1], "strides": [1], "elem": 1}]}`, ErrShape, 1, "negative dimension"},
		{"use after release", header + `{"alloc": "a", "size": 4}, {"release": "a"}, {"op": "o", "reads": ["a"]}]}`, ErrUseAfterRelease, 2, "use after release"},
		{"double release", header + `{"alloc": "a", "size": 4}, {"release": "a"}, {"release": "a"}]}`, ErrUseAfterRelease, 2, "use after release"},
		{"view after release", header + `{"alloc": "a", "size": 4}, {"release": "a"}, {"view": "v", "of": "a", "shape": [], "strides": [], "elem": 1}]}`, ErrUseAfterRelease, 2, "use after release"},
		{"discarded view", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "shape": [2], "strides": [1], "elem": 1}, {"release": "v"}, {"op": "o", "reads": ["v"]}]}`, ErrUseAfterRelease, 3, "use after release"},
		{"discarded bytes", header + `{"alloc": "a", "size": 4}, {"view": "v", "of": "a", "shape": [2], "strides": [1], "elem": 1}, {"release": "v"}, {"op": "o", "reads": ["a"]}]}`, ErrUseAfterRelease, 3, "use after release"},
		{"release external", header + `{"external": "w", "size": 4}, {"release": "w"}]}`, ErrExternal, 1, "release of an external buffer"},
		{"wait later", header + `{"op": "a", "waits": ["b"]}, {"op": "b"}]}`, ErrWaitOrder, 0, "wait on an op not yet submitted"},
		{"wait self", header + `{"op": "a", "waits": ["a"]}]}`, ErrWaitOrder, 0, "wait on an op not yet submitted"},
		{"wait unknown", header + `{"op": "a", "waits": ["zz"]}]}`, ErrUnknownName, 0, "unknown name"},
		{"sync later", header + `{"sync": "b"}, {"op": "b"}]}`, ErrWaitOrder, 0, "wait on an op not yet submitted"},
		{"dup op", header + `{"op": "a"}, {"op": "a"}]}`, ErrDuplicateName, 1, "duplicate name"},
		{"cost", header + `{"op": "a", "cost": 0}]}`, ErrInvalidCost, 0, "cost must be > 0"},
		{"reads null", header + `{"op": "a", "reads": null}]}`, ErrSyntax, 0, "syntax"},
		{"reads number", header + `{"op": "a", "reads": [1]}]}`, ErrSyntax, 0, "syntax"},
		{"empty name", header + `{"alloc": "", "size": 1}]}`, ErrInvalidName, 0, "empty or invalid name"},
		{"inplace type", header + `{"op": "a", "inplace": 1}]}`, ErrSyntax, 0, "syntax"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil {
				t.Fatalf("accepted")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v does not match %v", err, c.want)
			}
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *StepError", err)
			}
			if se.Index != c.index || se.Rule != c.rule {
				t.Fatalf("step %d rule %q, want step %d rule %q (%v)", se.Index, se.Rule, c.index, c.rule, err)
			}
			if got := RuleOf(err); got != c.rule {
				t.Fatalf("RuleOf(%v) = %q, want %q", err, got, c.rule)
			}
		})
	}
}

// TestSeparateNamespaces: an op may share its name with the buffer it writes.
func TestSeparateNamespaces(t *testing.T) {
	_, err := Parse([]byte(header + `{"alloc": "a", "size": 4}, {"op": "a", "writes": ["a"]}, {"sync": "a"}, {"release": "a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
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
