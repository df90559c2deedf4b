// Package bench holds subarena's measurement code: workloads, policies,
// metrics, the peak-vs-fragmentation harness, and Go benchmarks.
//
// The arena workloads follow the published specification bit for bit, so a
// figure measured here can be set beside one measured on another allocator:
//
//   - SplitMix64 is the generator every workload starts from (seed 42).
//   - ChurnSize draws W1's log-uniform sizes on a 256-byte grid.
//   - Churn is W1 "churn": fill to N_LIVE blocks, then free a random live
//     block and allocate a new one, pair after pair (settings Churn6k and
//     Churn10k, capacity 2^30 B).
//   - LIFO is W2 "inference-LIFO": 64 activation tensors of a decoder layer
//     allocated in order and freed in nearly reverse order, step after step.
//
// Each workload drives a BlockAllocator, the Alloc/Free shape shared by
// *arena.Arena, the FirstFit baseline (an address-ordered first-fit free
// list with coalescing, as ggml-alloc keeps) and NullAllocator (the harness
// alone, so its cost can be subtracted). Trace hashes prove the sequence of
// sizes and victims is the specified one; offset hashes fingerprint an
// allocator's placement.
//
// # Inference workloads and the peak-vs-fragmentation matrix
//
// Five generators build subarena-trace/v1 traces in memory, each from a
// configuration and a seed (Workloads lists the built-in settings; quick
// ones for CI, full ones with the Llama-3-8B and Inception-v3 shapes, whose
// configurations are the presets Llama8B, Batching8B, CNNInceptionV3 and
// RandomLarge):
//
//   - Llama: LLaMA prefill and decode on one compute engine — fused QKV and
//     gate/up projections split into column views, RoPE, attention,
//     residuals. With one in-order engine the fenced policies coincide:
//     it is the control.
//   - LlamaEngines: the same on compute, copy and host engines — K and V
//     stored and offloaded in chunks by the copy engine, logits rows
//     sampled (and log-probabilities computed) by the host one step ahead.
//   - Batching: continuous batching; the final hidden state's per-sequence
//     row blocks are read by the compute engine and, for some requests, by
//     the network engine, and die at different times.
//   - CNN: Inception-v3 blocks on two streams whose concat output is built
//     from channel views of one buffer, with a horizontally fused 1×1
//     reduction split between the streams.
//   - Random: random programs of views, ops, waits, syncs and releases.
//
// RunMatrix replays each workload (replay.Run, the real Allocator on
// simulated engines) under every release policy and arena fit strategy,
// and places it with the FirstFit baseline, which cannot back the
// Allocator and is driven by whole-buffer lifetimes derived from the trace
// instead (FirstFitPlan); its rows carry the Fit FitFirstFit. Each Cell
// reports the measures, defined once here and used by the CLI and the Go
// benchmarks alike:
//
//   - HWM: the highest end offset ever allocated, the arena a run needs;
//   - LiveLB: the most bytes some pending or future op still needs at one
//     moment of the same schedule (check.LiveLowerBound), which no safe
//     allocator placing buffers at offsets beats (a plan laying buffers over
//     strided footprints can); overhead = HWM / LiveLB − 1;
//   - external fragmentation at the peak: 1 − largest free run / total
//     free bytes within [0, HWM), right after the step that first reached
//     HWM. The replay does not record where free bytes lie, so the arena's
//     occupancy at that step is rebuilt from the plan and the trace, and
//     used only when its byte count equals the replay's own;
//   - pending peak: the most bytes pending users covered at once;
//   - allocations per second of the whole run.
//
// ir-order plans (and FirstFit's ir-order lifetimes) go through the plan
// checker; the table marks them UNSAFE with the violation count.
//
// Timelines (ReplayTimeline, PlanTimeline) lay a run out as PyTorch's
// memory viewer does — host step against arena offset, one rectangle per
// live piece, pending bytes hatched, the high-water mark drawn — and
// WriteSVG draws them; WritePeakSVG draws the matrix. A buffer a plan lays
// over a strided footprint of its host is drawn at that footprint's runs,
// outlined, from its first op (where it takes the bytes over) on.
// ViewerPage turns one or two runs (replays or plans, with the checker's
// report) into the data of the interactive viewer (package htmlviz), each
// piece carrying the ops that use or pin its bytes; WriteHTML writes the
// matrix and its pictures as one HTML report.
//
// Every byte range here is half-open, [lo, hi).
package bench
