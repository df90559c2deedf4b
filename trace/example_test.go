package trace_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/subarena/subarena/trace"
)

// Parse a trace, resolve its names and look at a view chain.
func ExampleParse() {
	data, err := os.ReadFile("testdata/split-qkv.json") // a fused QKV split into views, v read by a copy engine
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := trace.Parse(data)
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
