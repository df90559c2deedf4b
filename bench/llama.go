package bench

import (
	"fmt"

	"github.com/subarena/subarena/trace"
)

// LlamaConfig shapes the decoder workloads (Llama and LlamaEngines): a
// LLaMA-style model, a batch of sequences prefilled in chunks and then
// decoded token by token. Activations are row-major [rows, features] with
// one row per token, sequences packed in row blocks.
type LlamaConfig struct {
	Layers int
	// Dim is the model width d; Heads and KVHeads count query and key/value
	// heads of HeadDim elements; FFN is the feed-forward width; Vocab the
	// vocabulary (logits are float32).
	Dim, Heads, KVHeads, HeadDim, FFN, Vocab int64
	// Elem is the activation element size in bytes (2: bf16).
	Elem int64
	// Batch sequences, each with a Prompt-token prompt prefilled Chunk
	// tokens at a time (Chunk ≥ Prompt: in one pass), then Decode steps.
	Batch, Prompt, Chunk int64
	Decode               int
	// OffloadChunks (LlamaEngines) splits each layer's KV copy into this
	// many row chunks, each its own copy op (≥ 1).
	OffloadChunks int64
	// LogprobPercent (LlamaEngines) is the chance, in percent, that a
	// sequence asks for log-probabilities: its logits row is then also
	// read by a slower host op after sampling.
	LogprobPercent int64
	// Seed draws op-cost jitter and which sequences ask for logprobs.
	Seed uint64
}

// Llama8B is Llama-3-8B's shape (d 4096, 32 query and 8 KV heads of 128,
// FFN 14336, vocabulary 128256, bf16), four layers of it, four sequences
// of 512-token prompts prefilled 256 tokens at a time, then 16 decode
// steps.
var Llama8B = LlamaConfig{Layers: 4, Dim: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336,
	Vocab: 128256, Elem: 2, Batch: 4, Prompt: 512, Chunk: 256, Decode: 16, OffloadChunks: 4,
	LogprobPercent: 25, Seed: 42}

// LlamaSmall is a scaled-down shape with the same proportions (d 512,
// 8 query and 2 KV heads of 64, FFN 1792, vocabulary 16032), for quick
// runs and tests.
var LlamaSmall = LlamaConfig{Layers: 2, Dim: 512, Heads: 8, KVHeads: 2, HeadDim: 64, FFN: 1792,
	Vocab: 16032, Elem: 2, Batch: 4, Prompt: 64, Chunk: 32, Decode: 4, OffloadChunks: 4,
	LogprobPercent: 25, Seed: 42}

func (c LlamaConfig) validate() error {
	if c.Layers <= 0 || c.Dim <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 || c.FFN <= 0 ||
		c.Vocab <= 0 || c.Elem <= 0 || c.Batch <= 0 || c.Prompt <= 0 || c.Chunk <= 0 || c.Decode < 0 ||
		c.OffloadChunks <= 0 || c.LogprobPercent < 0 || c.LogprobPercent > 100 {
		return fmt.Errorf("%w: llama config %+v", ErrInvalidWorkload, c)
	}
	if c.Heads*c.HeadDim != c.Dim {
		return fmt.Errorf("%w: heads × head dim %d ≠ dim %d", ErrInvalidWorkload, c.Heads*c.HeadDim, c.Dim)
	}
	if c.Layers > 1<<10 || c.Decode > 1<<12 || c.Batch > 1<<10 || c.Prompt > 1<<20 {
		return fmt.Errorf("%w: llama config too large: %+v", ErrInvalidWorkload, c)
	}
	return nil
}

// Llama is workload 1: LLaMA-style prefill and decode on one compute
// engine. Each layer: RMS norm; a fused QKV projection whose output is
// split, per row, into Q, K and V column views; RoPE in place on Q and K;
// K and V stored to an external KV cache; attention; output projection; a
// residual add done in place; RMS norm; a fused gate/up projection split
// into halves; SiLU(gate)·up; down projection; the second residual add.
// The last prefill chunk and every decode step end with a final norm of
// each sequence's last row, the LM head, sampling, and a host sync on it.
//
// With one in-order engine every earlier user of released bytes
// happens-before every later allocation, so the fenced policies coincide;
// this workload is the control.
func Llama(cfg LlamaConfig) (*trace.Trace, error) {
	return generateLlama("llama", cfg, false)
}

// LlamaEngines is workload 2: the same model on three engines. Compute
// runs the layers. A copy engine writes each layer's new K and V rows into
// the device KV cache and offloads them to host memory, both straight from
// the K and V views of the fused QKV output, in OffloadChunks row chunks:
// the bytes of a chunk are done when its offload completes. Attention waits
// only for the cache writes, not for the offloads. A host engine samples
// each sequence from its row of the logits (and computes log-probabilities
// for the sequences that ask), while the compute engine already runs the
// next step: the host syncs on a step's sampling only after issuing the
// next step (one step of lookahead), and the next step's embedding waits
// for the sampled tokens.
//
// The Q columns of a QKV output are dead as soon as attention has run on
// the compute engine, while its K and V columns stay pinned by offloads on
// the copy engine; logits rows of sequences without logprobs are dead after
// sampling while the others still wait for the logprob op.
func LlamaEngines(cfg LlamaConfig) (*trace.Trace, error) {
	return generateLlama("llama-engines", cfg, true)
}

// generateLlama validates cfg and generates the decoder trace called name:
// on the compute engine alone, or with multi on compute, copy and host.
func generateLlama(name string, cfg LlamaConfig, multi bool) (*trace.Trace, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := newLlamaGen(name, cfg, multi)
	g.run()
	return g.b.finish()
}

const (
	engCompute = "compute"
	engCopy    = "copy"
	engHost    = "host"
)

type llamaGen struct {
	b       *builder
	c       LlamaConfig
	multi   bool     // compute, copy and host engines; sampling on the host
	offload bool     // K and V stored and offloaded by the copy engine
	logprob []bool   // per sequence
	pending []string // host ops of the previous step not yet synced
	samples []string // sampling ops of the previous step (the next embed waits for them)
}

func newLlamaGen(name string, c LlamaConfig, multi bool) *llamaGen {
	engines := []string{engCompute}
	if multi {
		engines = append(engines, engCopy, engHost)
	}
	g := &llamaGen{b: newBuilder(name, c.Seed, engines...), c: c, multi: multi, offload: multi}
	g.logprob = make([]bool, c.Batch)
	for s := range g.logprob {
		g.logprob[s] = g.b.intn(100) < c.LogprobPercent
	}
	return g
}

func (g *llamaGen) run() {
	c, b := g.c, g.b
	kvRow := c.KVHeads * c.HeadDim * c.Elem
	maxCtx := c.Prompt + int64(c.Decode)
	b.external("tok_embd", c.Vocab*c.Dim*c.Elem)
	b.external("tokens", 4*c.Batch*maxCtx)
	b.external("w_out", c.Vocab*c.Dim*c.Elem)
	for l := 0; l < c.Layers; l++ {
		b.external(fmt.Sprintf("w_qkv%d", l), c.Dim*(c.Heads+2*c.KVHeads)*c.HeadDim*c.Elem)
		b.external(fmt.Sprintf("w_o%d", l), c.Dim*c.Dim*c.Elem)
		b.external(fmt.Sprintf("w_gu%d", l), 2*c.Dim*c.FFN*c.Elem)
		b.external(fmt.Sprintf("w_down%d", l), c.Dim*c.FFN*c.Elem)
		b.external(fmt.Sprintf("kcache%d", l), c.Batch*maxCtx*kvRow)
		b.external(fmt.Sprintf("vcache%d", l), c.Batch*maxCtx*kvRow)
		if g.offload {
			b.external(fmt.Sprintf("host_kv%d", l), 2*c.Batch*maxCtx*kvRow)
		}
	}
	pass := 0
	for pos := int64(0); pos < c.Prompt; pos += c.Chunk {
		t := min(c.Chunk, c.Prompt-pos)
		g.forward(pass, t, pos, pos+t == c.Prompt)
		pass++
	}
	for s := 0; s < c.Decode; s++ {
		g.forward(pass, 1, c.Prompt+int64(s), true)
		pass++
	}
	for _, op := range g.pending {
		b.sync(op)
	}
}

// forward issues one pass over t tokens per sequence at position pos.
func (g *llamaGen) forward(pass int, t, pos int64, sample bool) {
	c, b := g.c, g.b
	n := c.Batch * t // rows
	rowD := c.Dim * c.Elem
	x := fmt.Sprintf("x.p%d", pass)
	b.alloc(x, n*rowD, engCompute)
	b.op("embed.p"+itoa(pass), engCompute, computeCost(0, float64(2*n*rowD)),
		opSpec{reads: []string{"tok_embd", "tokens"}, writes: []string{x}, waits: g.samples})
	g.samples = nil
	ctx := pos + t
	attnFlops := float64(4 * n * ctx * c.Heads * c.HeadDim)
	attnBytes := float64(2 * c.Batch * ctx * c.KVHeads * c.HeadDim * c.Elem)
	for l := 0; l < c.Layers; l++ {
		x = g.layer(pass, l, x, n, attnFlops, attnBytes)
	}
	if !sample {
		b.release(x)
		return
	}
	sfx := ".p" + itoa(pass)
	// The last row of each sequence: rows t-1, 2t-1, ...
	last := "xlast" + sfx
	b.view(last, x, (t-1)*rowD, []int64{c.Batch, rowD}, []int64{t * rowD, 1}, 1)
	fn := "fnorm" + sfx
	b.alloc(fn, c.Batch*rowD, engCompute)
	b.op("out_norm"+sfx, engCompute, computeCost(0, float64(2*c.Batch*rowD)),
		opSpec{reads: []string{last}, writes: []string{fn}})
	b.release(x)
	logits := "logits" + sfx
	rowV := c.Vocab * 4
	b.alloc(logits, c.Batch*rowV, engCompute)
	b.op("lm_head"+sfx, engCompute, computeCost(float64(2*c.Batch*c.Dim*c.Vocab), float64(c.Vocab*rowD)),
		opSpec{reads: []string{fn, "w_out"}, writes: []string{logits}})
	b.release(fn)
	if !g.multi {
		op := "sample" + sfx
		b.op(op, engCompute, computeCost(0, float64(c.Batch*rowV)),
			opSpec{reads: []string{logits}, writes: []string{"tokens"}})
		b.release(logits)
		b.sync(op)
		return
	}
	prev := g.pending
	g.pending = nil
	var lp []string
	for s := int64(0); s < c.Batch; s++ {
		row, op := sampleRow(b, logits, sfx, s, rowV)
		g.samples = append(g.samples, op)
		if g.logprob[s] {
			lp = append(lp, row)
		}
	}
	g.pending = append(g.pending, g.samples[len(g.samples)-1])
	for i, row := range lp {
		op := fmt.Sprintf("logprobs%s.%d", sfx, i)
		// A top-k over the row and a response to serialize: four passes.
		b.op(op, engHost, hostCost(float64(4*rowV)), opSpec{reads: []string{row}, writes: []string{"tokens"}})
		g.pending = append(g.pending, op)
	}
	b.release(logits)
	// One step of lookahead: only now does the host wait for the previous
	// step's host work.
	for _, op := range prev {
		b.sync(op)
	}
}

// sampleRow issues the host op that samples sequence s from its row of
// logits (rowV bytes a row, written by lm_head+sfx), through a view of that
// row; it returns the names of the view and the op.
func sampleRow(b *builder, logits, sfx string, s, rowV int64) (row, op string) {
	row = fmt.Sprintf("lrow%s.s%d", sfx, s)
	b.rows(row, logits, s, s+1, rowV)
	op = fmt.Sprintf("sample%s.s%d", sfx, s)
	b.op(op, engHost, hostCost(float64(rowV)), opSpec{reads: []string{row}, writes: []string{"tokens"},
		waits: []string{"lm_head" + sfx}})
	return row, op
}

// layer issues decoder layer l of pass over x and returns the name of its
// output (x is released).
//
// n is the number of rows (tokens in the batch); attention over the KV
// cache costs attnFlops and reads attnBytes of it.
func (g *llamaGen) layer(pass, l int, x string, n int64, attnFlops, attnBytes float64) string {
	c, b := g.c, g.b
	e := c.Elem
	rowD := c.Dim * e
	qW, qkvW := c.Heads*c.HeadDim, (c.Heads+2*c.KVHeads)*c.HeadDim
	sfx := fmt.Sprintf(".p%d.l%d", pass, l)
	nm := func(s string) string { return s + sfx }
	// Attention block.
	b.alloc(nm("xn"), n*rowD, engCompute)
	b.op(nm("attn_norm"), engCompute, computeCost(0, float64(2*n*rowD)),
		opSpec{reads: []string{x}, writes: []string{nm("xn")}})
	b.alloc(nm("qkv"), n*qkvW*e, engCompute)
	b.op(nm("qkv_proj"), engCompute, computeCost(float64(2*n*c.Dim*qkvW), float64(c.Dim*qkvW*e)),
		opSpec{reads: []string{nm("xn"), fmt.Sprintf("w_qkv%d", l)}, writes: []string{nm("qkv")}})
	b.release(nm("xn"))
	if g.offload {
		g.attentionOffload(l, sfx, n, attnFlops, attnBytes)
	} else {
		g.attentionInline(l, sfx, n, attnFlops, attnBytes)
	}
	b.alloc(nm("o"), n*rowD, engCompute)
	b.op(nm("o_proj"), engCompute, computeCost(float64(2*n*c.Dim*qW), float64(c.Dim*qW*e)),
		opSpec{reads: []string{nm("ao"), fmt.Sprintf("w_o%d", l)}, writes: []string{nm("o")}})
	b.release(nm("ao"))
	b.alloc(nm("h"), n*rowD, engCompute)
	b.op(nm("add_attn"), engCompute, computeCost(float64(n*c.Dim), float64(3*n*rowD)),
		opSpec{reads: []string{x, nm("o")}, writes: []string{nm("h")}, inPlace: true})
	b.release(x)
	b.release(nm("o"))
	// Feed-forward block.
	b.alloc(nm("hn"), n*rowD, engCompute)
	b.op(nm("ffn_norm"), engCompute, computeCost(0, float64(2*n*rowD)),
		opSpec{reads: []string{nm("h")}, writes: []string{nm("hn")}})
	b.alloc(nm("gu"), n*2*c.FFN*e, engCompute)
	b.op(nm("gate_up"), engCompute, computeCost(float64(4*n*c.Dim*c.FFN), float64(2*c.Dim*c.FFN*e)),
		opSpec{reads: []string{nm("hn"), fmt.Sprintf("w_gu%d", l)}, writes: []string{nm("gu")}})
	b.release(nm("hn"))
	b.cols(nm("gate"), nm("gu"), n, 2*c.FFN, 0, c.FFN, e)
	b.cols(nm("up"), nm("gu"), n, 2*c.FFN, c.FFN, 2*c.FFN, e)
	b.alloc(nm("act"), n*c.FFN*e, engCompute)
	b.op(nm("silu_mul"), engCompute, computeCost(float64(4*n*c.FFN), float64(3*n*c.FFN*e)),
		opSpec{reads: []string{nm("gate"), nm("up")}, writes: []string{nm("act")}})
	b.release(nm("gu"))
	b.alloc(nm("down"), n*rowD, engCompute)
	b.op(nm("down_proj"), engCompute, computeCost(float64(2*n*c.Dim*c.FFN), float64(c.Dim*c.FFN*e)),
		opSpec{reads: []string{nm("act"), fmt.Sprintf("w_down%d", l)}, writes: []string{nm("down")}})
	b.release(nm("act"))
	out := nm("x")
	b.alloc(out, n*rowD, engCompute)
	b.op(nm("add_ffn"), engCompute, computeCost(float64(n*c.Dim), float64(3*n*rowD)),
		opSpec{reads: []string{nm("h"), nm("down")}, writes: []string{out}, inPlace: true})
	b.release(nm("h"))
	b.release(nm("down"))
	return out
}

// splitQKV declares layer l's column views q, k and v of the fused QKV
// output of n rows, and returns the row widths (all heads, Q, K or V), the
// names' suffixer and the layer's KV cache buffers.
func (g *llamaGen) splitQKV(l int, sfx string, n int64) (qkvW, qW, kvW int64, nm func(string) string, kc, vc string) {
	c, b := g.c, g.b
	e := c.Elem
	qkvW = (c.Heads + 2*c.KVHeads) * c.HeadDim
	qW, kvW = c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	nm = func(s string) string { return s + sfx }
	kc, vc = fmt.Sprintf("kcache%d", l), fmt.Sprintf("vcache%d", l)
	b.cols(nm("q"), nm("qkv"), n, qkvW, 0, qW, e)
	b.cols(nm("k"), nm("qkv"), n, qkvW, qW, qW+kvW, e)
	b.cols(nm("v"), nm("qkv"), n, qkvW, qW+kvW, qW+2*kvW, e)
	return qkvW, qW, kvW, nm, kc, vc
}

// attentionInline is the single-engine attention block: Q, K and V are
// column views of the fused QKV output (one run of each per row), RoPE runs
// in place on Q and K, K and V go to the KV cache, attention writes ao.
func (g *llamaGen) attentionInline(l int, sfx string, n int64, attnFlops, attnBytes float64) {
	c, b := g.c, g.b
	e := c.Elem
	_, qW, kvW, nm, kc, vc := g.splitQKV(l, sfx, n)
	b.op(nm("rope"), engCompute, computeCost(float64(6*n*(qW+kvW)), float64(2*n*(qW+kvW)*e)),
		opSpec{reads: []string{nm("q"), nm("k")}, writes: []string{nm("q"), nm("k")}, inPlace: true})
	b.op(nm("store_kv"), engCompute, computeCost(0, float64(4*n*kvW*e)),
		opSpec{reads: []string{nm("k"), nm("v")}, writes: []string{kc, vc}})
	b.alloc(nm("ao"), n*qW*e, engCompute)
	b.op(nm("attn"), engCompute, computeCost(attnFlops, attnBytes+float64(2*n*qW*e)),
		opSpec{reads: []string{nm("q"), kc, vc}, writes: []string{nm("ao")}})
	b.release(nm("qkv"))
}

// attentionOffload is the three-engine attention block, laid out as
// FasterTransformer's context attention does: one kernel adds RoPE to the
// fused QKV output and transposes it into one head-major buffer holding
// three contiguous blocks, Q [heads, n, hd], K and V [kv heads, n, hd].
// The copy engine stores K and V to the device KV cache and offloads them
// to the host, OffloadChunks head groups at a time, straight from the K and
// V blocks; attention waits for the stores only. So the Q block's last user
// is attention, on the compute engine, while the K and V blocks stay pinned
// by offloads the compute engine never waits for.
func (g *llamaGen) attentionOffload(l int, sfx string, n int64, attnFlops, attnBytes float64) {
	c, b := g.c, g.b
	e := c.Elem
	qkvW, qW, kvW, nm, kc, vc := g.splitQKV(l, sfx, n)
	b.alloc(nm("qkvt"), n*qkvW*e, engCompute)
	b.op(nm("rope_transpose"), engCompute, computeCost(float64(6*n*(qW+kvW)), float64(2*n*qkvW*e)),
		opSpec{reads: []string{nm("q"), nm("k"), nm("v")}, writes: []string{nm("qkvt")}})
	b.release(nm("qkv"))
	headBytes := n * c.HeadDim * e // one head's block [n, hd]
	b.rows(nm("qt"), nm("qkvt"), 0, c.Heads, headBytes)
	chunks := min(c.OffloadChunks, c.KVHeads)
	var kv [][2]string
	var lastStore string
	for ch := int64(0); ch < chunks; ch++ {
		lo, hi := c.KVHeads*ch/chunks, c.KVHeads*(ch+1)/chunks
		kch, vch := fmt.Sprintf("kt%s.c%d", sfx, ch), fmt.Sprintf("vt%s.c%d", sfx, ch)
		b.rows(kch, nm("qkvt"), c.Heads+lo, c.Heads+hi, headBytes)
		b.rows(vch, nm("qkvt"), c.Heads+c.KVHeads+lo, c.Heads+c.KVHeads+hi, headBytes)
		lastStore = fmt.Sprintf("store_kv%s.c%d", sfx, ch)
		b.op(lastStore, engCopy, copyCost(float64(2*(hi-lo)*headBytes)),
			opSpec{reads: []string{kch, vch}, writes: []string{kc, vc}, waits: []string{nm("rope_transpose")}})
		kv = append(kv, [2]string{kch, vch})
	}
	b.alloc(nm("ao"), n*qW*e, engCompute)
	b.op(nm("attn"), engCompute, computeCost(attnFlops, attnBytes+float64(2*n*qW*e)),
		opSpec{reads: []string{nm("qt"), kc, vc}, writes: []string{nm("ao")}, waits: []string{lastStore}})
	for ch, p := range kv {
		lo, hi := c.KVHeads*int64(ch)/chunks, c.KVHeads*int64(ch+1)/chunks
		b.op(fmt.Sprintf("offload%s.c%d", sfx, ch), engCopy, copyCost(float64(2*(hi-lo)*headBytes)),
			opSpec{reads: []string{p[0], p[1]}, writes: []string{fmt.Sprintf("host_kv%d", l)}})
	}
	b.release(nm("qkvt"))
}
