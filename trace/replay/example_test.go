package replay_test

import (
	"fmt"
	"os"
	"strings"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
	"github.com/subarena/subarena/trace/tracefile"
)

// splitQKV is the split-QKV trace of package trace's examples: a fused QKV
// projection split into strided views, v offloaded by the copy engine.
const splitQKV = "../testdata/split-qkv.json"

// splitQKVProgram returns the resolved split-QKV trace.
func splitQKVProgram() *trace.Program {
	p, err := tracefile.LoadProgram(splitQKV)
	if err != nil {
		panic(err)
	}
	return p
}

// Replay the trace under the unsafe ir-order baseline and under the default policy, and
// check the plan each produces: under ir-order the copy engine still reads v, through the
// view chain v -> qkv, when tmp is written over it.
func ExampleRun_irOrder() {
	p := splitQKVProgram()
	for _, policy := range []subarena.Policy{subarena.IROrder, subarena.SubrangeFenced} {
		res, err := replay.Run(p, replay.Options{Policy: policy})
		if err != nil {
			fmt.Println(err)
			return
		}
		rep, _ := check.Plan(p, res.Plan)
		fmt.Println(policy, "safe:", rep.Safe)
		for _, v := range rep.Violations {
			fmt.Println(v.Earlier.Op, "on", v.Earlier.Engine, "via", strings.Join(v.Earlier.Chain, " -> "),
				"| missing edge:", v.MissingEdge())
		}
	}
	// Output:
	// ir-order safe: false
	// offload_v on copy via v -> qkv | missing edge: offload_v -> use_tmp
	// subrange-fenced safe: true
}

// Replay under the default policy and write the plan.
func ExampleRun() {
	p := splitQKVProgram()
	res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("buffers", res.Buffers, "ops", res.Ops, "live_lb", res.LiveLB)
	_ = trace.WritePlan(os.Stdout, &trace.Plan{Trace: res.Trace, Size: res.HWM, Offsets: res.Plan.Offsets})
	// Output:
	// buffers 2 ops 4 live_lb 24576
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
