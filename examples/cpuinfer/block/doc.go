// Package block is a small decoder block in pure Go float32, run on
// subarena memory across three engines and checked bit for bit against a
// run in which every tensor has its own Go slice.
//
// # What it computes
//
// A decoder-only model of Config.Layers blocks over a prefill of T tokens
// and then S decode steps, one token each (greedy: each step feeds the
// argmax of the last; or Forced tokens). A block is
//
//	h   = RMSNorm(x)
//	qkv = h·Wqkv                 one fused projection, [n, 3D]
//	q, k, v = split(qkv)         views [n, H, Dh] of its three thirds
//	q, k = RoPE(q), RoPE(k)      in place
//	cache[p0:p0+n] = k, v        copy engine
//	a   = causal attention(q, cache)
//	x  += a·Wo                   residual, in place
//	g|u = RMSNorm(x)·Wgu         one fused projection, [n, 2F], split in halves
//	g   = silu(g)·u              in place
//	x  += g·Wdown                residual
//
// and the model ends with a final RMSNorm and the LM head, logits [n, V].
// Weights, the prompt and forced tokens are drawn from Config.Seed.
//
// # How the arena run uses the Allocator
//
// Run drives one Timeline with three goroutine engines of a sync.Executor:
// compute runs every kernel; copy writes the KV cache and offloads each
// finished chunk of it to a host buffer; consumer reads each step's last
// logits row and takes its argmax. Every activation — the residual stream,
// the norms, the fused projections, attention output, logits and the KV
// cache chunks — is a buffer of one subarena Allocator over a []byte
// arena, and the kernels read and write it through the strides of
// subarena views: Q, K and V are Split+Reshape views of the qkv buffer,
// gate and up Split views of the gate/up buffer, the logits row a Select
// view. The host uses the Allocator exactly as an engine would:
//
//   - Alloc at the point of the engine that writes the buffer first
//     (compute for activations, copy for KV chunks); when nothing fits,
//     wait for the event the NoSpaceError names and retry;
//   - submit the op, then Use every view it touches with its event (the
//     Allocator accepts an event that has already completed);
//   - Release a buffer (Discard a view: the K and V thirds once the copy
//     engine has them, the up half once silu·up has it) as soon as its
//     last reader has been submitted; completions flow back from the
//     engine goroutines through the Timeline.
//
// Attention reads the offloaded prefix of the cache from host memory and
// the rest from arena chunks; a chunk leaves the arena as soon as it is
// full and offloaded, so between steps each layer keeps at most one
// partly filled chunk there.
//
// # What is checked
//
// Every kernel rounds each product to float32 explicitly before adding it,
// which forbids fused multiply-adds: the same kernel on the same values
// gives the same bits whatever the strides, so Compare can demand
// bit-identical logits, argmaxes, tokens and KV caches. Under every safe
// policy the arena run matches Reference; under ir-order (bytes return at
// Release, ignoring pending readers) a held consumer (Options.HoldConsumer)
// reads logits rows that later steps have already overwritten, and the
// result is wrong. RunStats reports the arena's high-water mark;
// ReferenceStats the reference's total bytes.
//
// # Ranges and units
//
// Byte ranges are half-open, [lo, hi). Tensor strides count float32
// elements; subarena layouts count bytes (FromView divides by 4 and
// checks that it can).
//
// # Costs
//
// Kernels are straightforward loops: a matmul is n·K·M multiply-adds read
// through strides, attention is O(n·(p0+n)·D). The Allocator costs O(1)
// per allocation plus O(log n) per covered run per Use; each op costs a
// goroutine hand-off in the Executor. This is a correctness demonstration,
// not a fast inference engine.
package block
