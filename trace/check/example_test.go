package check_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
)

// Check a plan that puts tmp over qkv, as an allocator that reuses bytes in host order
// does: the copy engine still reads v, through the view chain v -> qkv, when tmp is
// written over it.
func ExamplePlan() {
	data, _ := os.ReadFile("../testdata/split-qkv.json") // a fused QKV split into views, v read by a copy engine
	t, _ := trace.Parse(data)
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
