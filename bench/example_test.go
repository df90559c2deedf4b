package bench_test

import (
	"fmt"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace/replay"
)

// Generate a workload trace and replay it under two policies.
func ExampleLlamaEngines() {
	t, err := bench.LlamaEngines(bench.LlamaSmall)
	if err != nil {
		panic(err)
	}
	p, err := t.Resolve()
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Name, t.Engines, p.NumAllocs() > 0)
	for _, pol := range []subarena.Policy{subarena.WholeFenced, subarena.SubrangeFenced} {
		res, err := replay.Run(p, replay.Options{Policy: pol})
		if err != nil {
			panic(err)
		}
		fmt.Println(pol, res.HWM >= res.LiveLB)
	}
	// Output:
	// llama-engines [compute copy host] true
	// whole-fenced true
	// subrange-fenced true
}

// Run part of the quick matrix and read one cell.
func ExampleRunMatrix() {
	m, err := bench.RunMatrix(bench.MatrixOptions{
		Quick:     true,
		Workloads: []string{"cnn-concat"},
		Policies:  []subarena.Policy{subarena.IROrder, subarena.SubrangeFenced},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range m.Cells {
		fmt.Println(c.Workload, c.Policy, c.Fit, c.Checked, c.Violations > 0)
	}
	// Output:
	// cnn-concat ir-order fast true true
	// cnn-concat ir-order lean true true
	// cnn-concat subrange-fenced fast false false
	// cnn-concat subrange-fenced lean false false
	// cnn-concat ir-order first-fit true true
}

// Draw the memory timeline of a replay.
func ExampleReplayTimeline() {
	t, _ := bench.CNN(bench.CNNSmall)
	p, _ := t.Resolve()
	res, _ := replay.Run(p, replay.Options{Policy: subarena.WholeFenced})
	tl, err := bench.ReplayTimeline(p, res)
	if err != nil {
		panic(err)
	}
	fmt.Println(tl.CheckInvariants(), tl.HWM == res.HWM, len(tl.Segments) > 0)
	// tl.WriteSVG(w) draws it.
	// Output:
	// <nil> true true
}
