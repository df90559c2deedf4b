package check_test

import (
	"fmt"
	"strings"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
)

// splitQKV is trace's example trace (testdata/split-qkv.json there): a fused QKV
// projection split into views, one of them read by a copy engine.
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

// Check a plan that puts tmp over qkv, as an allocator that reuses bytes in host order
// does: the copy engine still reads v, through the view chain v -> qkv, when tmp is
// written over it.
func ExamplePlan() {
	t, _ := trace.Parse([]byte(splitQKV))
	p, _ := t.Resolve()
	plan := &trace.Plan{Trace: t.Name, Size: 24576, Offsets: map[string]int64{"qkv": 0, "tmp": 0}}
	rep, err := check.Plan(p, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("safe:", rep.Safe)
	for _, v := range rep.Violations {
		fmt.Println(v.Earlier.Op, "on", v.Earlier.Engine, "via", strings.Join(v.Earlier.Chain, " -> "),
			"| missing edge:", v.MissingEdge())
	}
	// Output:
	// safe: false
	// offload_v on copy via v -> qkv | missing edge: offload_v -> use_tmp
}
