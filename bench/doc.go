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
package bench
