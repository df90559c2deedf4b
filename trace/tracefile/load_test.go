package tracefile_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
	"github.com/subarena/subarena/trace/tracefile"
)

// ggmlDoc is a small ggml-alloc-trace/1 document: weights, an input, an in-place MUL, a
// TRANSPOSE view of its output and a CONT reading it.
var ggmlDoc = testutil.Text("../ggmltrace/testdata/tiny.json")

// header opens a subarena-trace/v1 document; steps follow.
const header = `{"format": "subarena-trace/v1", "name": "x", "engines": ["c", "d"], "steps": [`

// sharedData is the repository's third-party test data (see testdata/README.md),
// relative to this package.
const sharedData = "../../testdata"

// TestRoundTrip: traces of every format read back identically from their written form.
func TestRoundTrip(t *testing.T) {
	paths := []string{"../testdata/split-qkv.json", sharedData + "/ggml/ggml-tiny.json",
		sharedData + "/minimalloc/A.1048576.csv", sharedData + "/minimalloc/input.12.csv"}
	for _, path := range paths {
		tr := tracetest.Load(t, path)
		out := trace.Marshal(tr)
		again, err := trace.Parse(out)
		if err != nil {
			t.Fatalf("%s: reparse: %v\n%s", path, err, out)
		}
		if !tr.Equal(again) {
			t.Fatalf("%s: round trip differs", path)
		}
		if string(trace.Marshal(again)) != string(out) {
			t.Fatalf("%s: second write differs", path)
		}
	}
}

// TestReadProgram: ReadProgram and LoadProgram give, for each format, the Program that
// Read and Resolve give, and Read's error for bad input.
func TestReadProgram(t *testing.T) {
	docs := map[string]string{
		"trace":      string(trace.Marshal(&trace.Trace{Name: "x", Granule: 256, Engines: []string{"e"}, Steps: []trace.Step{{Kind: trace.KindAlloc, Name: "a", Size: 8, Engine: "e"}, {Kind: trace.KindOp, Name: "w", Engine: "e", Writes: []string{"a"}, Cost: 1}}})),
		"ggml":       ggmlDoc,
		"minimalloc": "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n",
		"bad":        `{"format": "subarena-trace/v1", "engines": ["e"], "steps": [{"op": "o", "reads": ["nope"]}]}`,
	}
	dir := t.TempDir()
	for name, doc := range docs {
		tr, err := tracefile.Read(strings.NewReader(doc), name)
		p, perr := tracefile.ReadProgram(strings.NewReader(doc), name)
		path := dir + "/" + name + ".in"
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		lp, lerr := tracefile.LoadProgram(path)
		if name == "bad" {
			if err == nil || perr == nil || lerr == nil || err.Error() != perr.Error() || err.Error() != lerr.Error() {
				t.Fatalf("bad: errors %v / %v / %v", err, perr, lerr)
			}
			continue
		}
		if err != nil || perr != nil || lerr != nil {
			t.Fatalf("%s: %v / %v / %v", name, err, perr, lerr)
		}
		want := tracetest.Resolve(t, tr)
		for _, got := range []*trace.Program{p, lp} {
			if !reflect.DeepEqual(got.Trace, want.Trace) || !reflect.DeepEqual(got.Ops, want.Ops) ||
				!reflect.DeepEqual(got.Buffers, want.Buffers) || !reflect.DeepEqual(got.Views, want.Views) {
				t.Fatalf("%s: program differs from Read + Resolve", name)
			}
		}
	}
}
