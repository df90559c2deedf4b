package trace_test

import (
	"fmt"
	"os"
	"strings"

	subarena "github.com/subarena/subarena"
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

// Replay the trace under the unsafe ir-order baseline and check the plan it produces: the
// copy engine still reads v, through the view chain v -> qkv, when tmp is written over it.
func ExampleCheck() {
	t, _ := trace.Parse([]byte(splitQKV))
	p, _ := t.Resolve()
	res, err := trace.Replay(p, trace.ReplayOptions{Policy: subarena.IROrder})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, _ := trace.Check(p, res.Plan)
	fmt.Println("safe:", rep.Safe)
	for _, v := range rep.Violations {
		fmt.Println(v.Earlier.Op, "on", v.Earlier.Engine, "via", strings.Join(v.Earlier.Chain, " -> "),
			"| missing edge:", v.MissingEdge())
	}
	// Output:
	// safe: false
	// offload_v on copy via v -> qkv | missing edge: offload_v -> use_tmp
}

// Replay under the default policy and write the plan.
func ExampleReplay() {
	t, _ := trace.Parse([]byte(splitQKV))
	p, _ := t.Resolve()
	res, err := trace.Replay(p, trace.ReplayOptions{Policy: subarena.SubrangeFenced})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, _ := trace.Check(p, res.Plan)
	fmt.Println("buffers", res.Buffers, "ops", res.Ops, "live_lb", res.LiveLB, "safe", rep.Safe)
	_ = trace.WritePlan(os.Stdout, &trace.Plan{Trace: res.Trace, Size: res.HWM, Offsets: res.Plan.Offsets})
	// Output:
	// buffers 2 ops 4 live_lb 24576 safe true
	// {
	//   "format": "subarena-plan/v1",
	//   "trace": "split-qkv",
	//   "size": 32768,
	//   "offsets": {
	//     "qkv": 0,
	//     "tmp": 24576
	//   }
	// }
}
