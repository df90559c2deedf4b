package trace_test

import (
	"fmt"
	"strings"

	"github.com/subarena/subarena/trace"
)

const splitQKV = `{"format": "subarena-trace/v1", "name": "split-qkv", "engines": ["compute", "copy"], "steps": [
	{"alloc": "qkv", "size": 24576, "engine": "compute"},
	{"op": "proj", "engine": "compute", "writes": ["qkv"], "cost": 4},
	{"view": "q", "of": "qkv", "offset": 0, "shape": [16, 128], "strides": [1536, 4], "elem": 4},
	{"view": "k", "of": "qkv", "offset": 512, "shape": [16, 128], "strides": [1536, 4], "elem": 4},
	{"view": "v", "of": "qkv", "offset": 1024, "shape": [16, 128], "strides": [1536, 4], "elem": 4},
	{"view": "kt", "of": "k", "offset": 0, "shape": [128, 16], "strides": [4, 1536], "elem": 4},
	{"op": "scores", "engine": "compute", "reads": ["q", "kt"], "cost": 2},
	{"op": "offload_v", "engine": "copy", "waits": ["proj"], "reads": ["v"], "cost": 20},
	{"release": "qkv"},
	{"alloc": "tmp", "size": 8192, "engine": "compute"},
	{"op": "use_tmp", "engine": "compute", "writes": ["tmp"], "cost": 1},
	{"release": "tmp"}]}`

// Parse a trace, resolve its names and look at a view chain.
func ExampleParse() {
	t, err := trace.Parse([]byte(splitQKV))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := t.Resolve()
	kt, _ := p.Lookup("kt")
	bytes, exact := p.Footprint(kt)
	fmt.Println(t.Name, len(t.Steps), "steps, granule", t.Granule)
	fmt.Println(strings.Join(p.Chain(kt), " -> "), bytes.Len(), "bytes in", bytes.NumRuns(), "runs, exact:", exact)
	// Output:
	// split-qkv 12 steps, granule 256
	// kt -> k -> qkv 8192 bytes in 16 runs, exact: true
}

// A bad trace is rejected with the step and the rule it breaks.
func ExampleParse_error() {
	_, err := trace.Parse([]byte(`{"format": "subarena-trace/v1", "engines": ["c"], "steps": [
		{"alloc": "a", "size": 64},
		{"release": "a"},
		{"op": "late", "reads": ["a"]}]}`))
	fmt.Println(err)
	// Output:
	// trace: step 2: use after release: "a": buffer "a" was released
}
