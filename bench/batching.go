package bench

import (
	"fmt"

	"github.com/subarena/subarena/trace"
)

// BatchingConfig shapes workload 3, continuous batching.
type BatchingConfig struct {
	// Model gives the layer shapes; its Batch, Prompt, Chunk, Decode,
	// OffloadChunks and LogprobPercent are not used.
	Model LlamaConfig
	// Requests is how many sequences are served, MaxSeqs how many run at
	// once, TokenBudget the rows of one iteration (decode rows first, then
	// prefill chunks).
	Requests             int
	MaxSeqs, TokenBudget int64
	// Prompt and output lengths are drawn uniformly from [min, max].
	PromptMin, PromptMax int64
	OutputMin, OutputMax int64
	// ExportPercent is the chance that a request also returns its hidden
	// states (an embedding or reward request, or features for a remote
	// draft model): the network engine sends its row block of each
	// iteration's final hidden state.
	ExportPercent int64
	Seed          uint64
}

// BatchingSmall serves 24 requests on the LlamaSmall shape, 8 at a time,
// 64 rows per iteration.
var BatchingSmall = BatchingConfig{Model: LlamaSmall, Requests: 24, MaxSeqs: 8, TokenBudget: 64,
	PromptMin: 16, PromptMax: 96, OutputMin: 4, OutputMax: 16, ExportPercent: 25, Seed: 42}

// Batching8B serves 48 requests on the Llama8B shape, 16 at a time, 512
// rows per iteration.
var Batching8B = BatchingConfig{Model: Llama8B, Requests: 48, MaxSeqs: 16, TokenBudget: 512,
	PromptMin: 64, PromptMax: 768, OutputMin: 8, OutputMax: 32, ExportPercent: 25, Seed: 42}

// Network engine cost: 5 GB/s plus 20 µs per message.
const (
	netBytesPerUnit = 5e3
	netOverhead     = 20
)

func netCost(bytes float64) float64 { return netOverhead + bytes/netBytesPerUnit }

func (c BatchingConfig) validate() error {
	m := c.Model
	m.Batch, m.Prompt, m.Chunk, m.Decode, m.OffloadChunks, m.LogprobPercent = 1, 1, 1, 0, 1, 0
	if err := m.validate(); err != nil {
		return err
	}
	if c.Requests <= 0 || c.Requests > 1<<12 || c.MaxSeqs <= 0 || c.TokenBudget < c.MaxSeqs ||
		c.PromptMin <= 0 || c.PromptMax < c.PromptMin || c.OutputMin <= 0 || c.OutputMax < c.OutputMin ||
		c.ExportPercent < 0 || c.ExportPercent > 100 || c.PromptMax > 1<<16 || c.OutputMax > 1<<12 {
		return fmt.Errorf("%w: batching config %+v", ErrInvalidWorkload, c)
	}
	return nil
}

type batchSeq struct {
	id             int
	prompt, output int64
	prefilled, out int64
	export         bool
}

// rowBlock is one sequence's rows [lo, hi) in an iteration's batch.
type rowBlock struct {
	seq    *batchSeq
	lo, hi int64
	sample bool // decode row, or the chunk that finishes the prompt
}

// Batching is workload 3: continuous batching on three engines. A seeded
// scheduler admits requests up to MaxSeqs and packs each iteration's rows,
// one per decode sequence and then prefill chunks up to TokenBudget, into
// row blocks of one batched activation per layer tensor (layers as in
// Llama). The final hidden state's row blocks have different readers that
// finish at different times: the compute engine normalizes the last row of
// every sequence that samples, and the network engine sends the whole row
// block of every request that returns hidden states. The host engine
// samples each sequence from its logits row; as in Llama the host syncs on
// an iteration's sampling only after issuing the next iteration, whose
// embedding waits for the tokens.
//
// Rows of sequences that export nothing are dead as soon as the compute
// engine has read them, while exported row blocks stay pinned until their
// send completes.
func Batching(cfg BatchingConfig) (*trace.Trace, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := cfg.Model
	m.Seed = cfg.Seed
	g := newLlamaGen("batching", m, false)
	b := g.b
	b.t.Engines = []string{engCompute, engHost, "net"}
	g.multi = true
	waiting := make([]*batchSeq, cfg.Requests)
	for i := range waiting {
		waiting[i] = &batchSeq{id: i,
			prompt: cfg.PromptMin + b.intn(cfg.PromptMax-cfg.PromptMin+1),
			output: cfg.OutputMin + b.intn(cfg.OutputMax-cfg.OutputMin+1),
			export: b.intn(100) < cfg.ExportPercent}
	}
	maxCtx := cfg.PromptMax + cfg.OutputMax
	b.external("tok_embd", m.Vocab*m.Dim*m.Elem)
	b.external("tokens", 4*int64(cfg.Requests)*maxCtx)
	b.external("w_out", m.Vocab*m.Dim*m.Elem)
	b.external("hidden_out", int64(cfg.Requests)*maxCtx*m.Dim*m.Elem)
	kvRow := m.KVHeads * m.HeadDim * m.Elem
	for l := 0; l < m.Layers; l++ {
		b.external(fmt.Sprintf("w_qkv%d", l), m.Dim*(m.Heads+2*m.KVHeads)*m.HeadDim*m.Elem)
		b.external(fmt.Sprintf("w_o%d", l), m.Dim*m.Dim*m.Elem)
		b.external(fmt.Sprintf("w_gu%d", l), 2*m.Dim*m.FFN*m.Elem)
		b.external(fmt.Sprintf("w_down%d", l), m.Dim*m.FFN*m.Elem)
		b.external(fmt.Sprintf("kcache%d", l), int64(cfg.MaxSeqs)*maxCtx*kvRow)
		b.external(fmt.Sprintf("vcache%d", l), int64(cfg.MaxSeqs)*maxCtx*kvRow)
	}
	var running []*batchSeq
	for it := 0; len(waiting) > 0 || len(running) > 0; it++ {
		for len(waiting) > 0 && int64(len(running)) < cfg.MaxSeqs {
			running = append(running, waiting[0])
			waiting = waiting[1:]
		}
		blocks := scheduleIteration(running, cfg.TokenBudget)
		g.batchIteration(it, blocks)
		kept := running[:0]
		for _, s := range running {
			if s.out < s.output {
				kept = append(kept, s)
			}
		}
		running = kept
	}
	for _, op := range g.pending {
		b.sync(op)
	}
	return b.finish()
}

// scheduleIteration packs one iteration: every decoding sequence gets one
// row, then prefilling sequences get chunks in admission order until the
// budget is spent. It advances the sequences' counters.
func scheduleIteration(running []*batchSeq, budget int64) []rowBlock {
	var blocks []rowBlock
	var rows int64
	for _, s := range running {
		if s.prefilled == s.prompt {
			blocks = append(blocks, rowBlock{seq: s, lo: rows, hi: rows + 1, sample: true})
			rows++
			s.out++
		}
	}
	for _, s := range running {
		if s.prefilled == s.prompt || rows == budget {
			continue
		}
		n := min(s.prompt-s.prefilled, budget-rows)
		s.prefilled += n
		done := s.prefilled == s.prompt
		blocks = append(blocks, rowBlock{seq: s, lo: rows, hi: rows + n, sample: done})
		rows += n
		if done {
			s.out++
		}
	}
	return blocks
}

// batchIteration issues one iteration over blocks.
func (g *llamaGen) batchIteration(it int, blocks []rowBlock) {
	c, b := g.c, g.b
	n := blocks[len(blocks)-1].hi
	rowD := c.Dim * c.Elem
	sfx := ".p" + itoa(it)
	x := "x" + sfx
	b.alloc(x, n*rowD, engCompute)
	b.op("embed"+sfx, engCompute, computeCost(0, float64(2*n*rowD)),
		opSpec{reads: []string{"tok_embd", "tokens"}, writes: []string{x}, waits: g.samples})
	g.samples = nil
	var attnFlops, attnBytes float64
	for _, blk := range blocks {
		rows := blk.hi - blk.lo
		ctx := blk.seq.prefilled + blk.seq.out
		attnFlops += float64(4 * rows * ctx * c.Heads * c.HeadDim)
		attnBytes += float64(2 * ctx * c.KVHeads * c.HeadDim * c.Elem)
	}
	for l := 0; l < c.Layers; l++ {
		x = g.layer(it, l, x, n, attnFlops, attnBytes)
	}
	lastLayer := fmt.Sprintf("add_ffn%s.l%d", sfx, c.Layers-1)
	var lastRows []string
	for i, blk := range blocks {
		if blk.sample {
			v := fmt.Sprintf("hlast%s.b%d", sfx, i)
			b.rows(v, x, blk.hi-1, blk.hi, rowD)
			lastRows = append(lastRows, v)
		}
		if blk.seq.export {
			v := fmt.Sprintf("hrows%s.b%d", sfx, i)
			b.rows(v, x, blk.lo, blk.hi, rowD)
			op := fmt.Sprintf("send%s.b%d", sfx, i)
			b.op(op, "net", netCost(float64((blk.hi-blk.lo)*rowD)),
				opSpec{reads: []string{v}, writes: []string{"hidden_out"}, waits: []string{lastLayer}})
		}
	}
	prev := g.pending
	g.pending = nil
	if len(lastRows) == 0 {
		b.release(x)
	} else {
		s := int64(len(lastRows))
		fn, logits := "fnorm"+sfx, "logits"+sfx
		b.alloc(fn, s*rowD, engCompute)
		b.op("out_norm"+sfx, engCompute, computeCost(0, float64(2*s*rowD)),
			opSpec{reads: lastRows, writes: []string{fn}})
		b.release(x)
		rowV := c.Vocab * 4
		b.alloc(logits, s*rowV, engCompute)
		b.op("lm_head"+sfx, engCompute, computeCost(float64(2*s*c.Dim*c.Vocab), float64(c.Vocab*rowD)),
			opSpec{reads: []string{fn, "w_out"}, writes: []string{logits}})
		b.release(fn)
		for i := int64(0); i < s; i++ {
			_, op := sampleRow(b, logits, sfx, i, rowV)
			g.samples = append(g.samples, op)
		}
		g.pending = append(g.pending, g.samples[len(g.samples)-1])
		b.release(logits)
	}
	for _, op := range prev {
		b.sync(op)
	}
}
