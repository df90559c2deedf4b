package bench

import (
	"fmt"

	"github.com/subarena/subarena/trace"
)

// Workload is one built-in trace generator with its setting.
type Workload struct {
	// Name is how the CLI and the reports call it.
	Name string
	// Summary says in one line what the trace models.
	Summary string
	// Build generates the trace (deterministic: same setting, same trace).
	Build func() (*trace.Trace, error)
}

// The quick and full settings of the decoder workloads: a serving batch
// that spends most of its time decoding (chunked prefill of short prompts,
// then decode steps), where sampling and logits dominate activation memory
// between steps.
var (
	llamaQuick = func() LlamaConfig {
		c := LlamaSmall
		c.Batch, c.Prompt, c.Chunk, c.Decode = 16, 16, 16, 4
		return c
	}()
	llamaFull = func() LlamaConfig {
		c := Llama8B
		c.Layers, c.Batch, c.Prompt, c.Chunk, c.Decode = 2, 32, 32, 16, 8
		return c
	}()
	batchingQuick = func() BatchingConfig {
		c := BatchingSmall
		c.Model.Layers, c.Requests, c.MaxSeqs, c.TokenBudget = 1, 12, 6, 48
		return c
	}()
	batchingFull = func() BatchingConfig {
		c := Batching8B
		c.Model.Layers, c.Requests, c.TokenBudget = 2, 12, 128
		return c
	}()
	cnnQuick = func() CNNConfig {
		c := CNNSmall
		c.Frames, c.Blocks = 2, 2
		return c
	}()
	randomQuick = func() RandomConfig {
		c := RandomSmall
		c.Programs, c.Ops = 2, 100
		return c
	}()
)

// Workloads returns the five built-in workloads, in order: llama,
// llama-engines, batching, cnn-concat, random. quick selects the small
// settings used by tests and CI; the full settings use the Llama-3-8B and
// Inception-v3 shapes.
func Workloads(quick bool) []Workload {
	lc, bc, cc, rc := llamaFull, batchingFull, CNNInceptionV3, RandomLarge
	if quick {
		lc, bc, cc, rc = llamaQuick, batchingQuick, cnnQuick, randomQuick
	}
	desc := func(c LlamaConfig) string {
		return fmt.Sprintf("%d layers d=%d, batch %d, prompt %d in chunks of %d, %d decode steps",
			c.Layers, c.Dim, c.Batch, c.Prompt, c.Chunk, c.Decode)
	}
	return []Workload{
		{Name: "llama", Summary: "LLaMA prefill+decode on one engine (control): " + desc(lc),
			Build: func() (*trace.Trace, error) { return Llama(lc) }},
		{Name: "llama-engines", Summary: "the same on compute, copy (KV store/offload) and host (sampling) engines",
			Build: func() (*trace.Trace, error) { return LlamaEngines(lc) }},
		{Name: "batching", Summary: fmt.Sprintf("continuous batching of %d requests, %d at a time, hidden states sent over the network",
			bc.Requests, bc.MaxSeqs), Build: func() (*trace.Trace, error) { return Batching(bc) }},
		{Name: "cnn-concat", Summary: fmt.Sprintf("%d InceptionC blocks × %d frames on two streams, concat by aliasing",
			cc.Blocks, cc.Frames), Build: func() (*trace.Trace, error) { return CNN(cc) }},
		{Name: "random", Summary: fmt.Sprintf("%d random programs of %d ops on %d engines", rc.Programs, rc.Ops, rc.Engines),
			Build: func() (*trace.Trace, error) { return Random(rc) }},
	}
}

// LookupWorkload returns the built-in workload called name.
func LookupWorkload(name string, quick bool) (Workload, error) {
	for _, w := range Workloads(quick) {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("%w: %q (want llama, llama-engines, batching, cnn-concat or random)", ErrUnknownWorkload, name)
}
