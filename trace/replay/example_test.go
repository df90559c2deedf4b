package replay_test

import (
	"fmt"
	"os"
	"strings"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
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

// Replay the trace under the unsafe ir-order baseline and check the plan it produces: the
// copy engine still reads v, through the view chain v -> qkv, when tmp is written over it.
func ExampleRun_irOrder() {
	t, _ := trace.Parse([]byte(splitQKV))
	p, _ := t.Resolve()
	res, err := replay.Run(p, replay.Options{Policy: subarena.IROrder})
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
func ExampleRun() {
	t, _ := trace.Parse([]byte(splitQKV))
	p, _ := t.Resolve()
	res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
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
