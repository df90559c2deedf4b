package block_test

import (
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/examples/cpuinfer/block"
)

// Run the tiny model on arena memory under the default policy and compare
// it with the per-tensor reference, bit for bit.
func ExampleRun() {
	cfg, _ := block.Preset("tiny")
	w, _ := block.NewWeights(cfg)
	ref, refStats, _ := block.Reference(w)
	res, st, err := block.Run(w, block.Options{Policy: subarena.SubrangeFenced})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("bit-identical:", block.Compare(res, ref) == nil)
	fmt.Println("arena smaller than the reference's tensors:", st.HighWater < refStats.TotalBytes)
	fmt.Println("generated:", len(res.Tokens)-cfg.Prompt, "tokens")
	// Output:
	// bit-identical: true
	// arena smaller than the reference's tensors: true
	// generated: 6 tokens
}

// Under ir-order, with a consumer slow enough that later steps overwrite
// the logits rows it has not read yet, the result is wrong.
func ExampleRun_irOrder() {
	cfg, _ := block.Preset("tiny")
	cfg.Forced = true // nothing waits for the consumer, so it can be held
	w, _ := block.NewWeights(cfg)
	ref, _, _ := block.Reference(w)
	res, _, err := block.Run(w, block.Options{Policy: subarena.IROrder, HoldConsumer: true})
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println("bit-identical:", block.Compare(res, ref) == nil)
	// Output:
	// bit-identical: false
}
