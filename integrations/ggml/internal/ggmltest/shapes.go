package ggmltest

import "fmt"

// Shape is one graph of a model: a step of Tokens new tokens per sequence
// after Past cached ones.
type Shape struct {
	Name   string
	Params Params
	Tokens int
	Past   int
}

func (s Shape) String() string { return s.Name }

// LLaMA7B is LLaMA-7B's shape (width 4096, 32 heads, n_ff 11008, 32 layers,
// 32000-token vocabulary) with ctx cache positions, sizing only.
func LLaMA7B(ctx, seqs int, attn Attn) Params {
	return Params{Arch: LLaMA, Embd: 4096, Heads: 32, FF: 11008, Layers: 32, Vocab: 32000, Ctx: ctx, Seqs: seqs,
		Attn: attn, LastOnly: true, SizeOnly: true, Seed: 7}
}

// GPT2Small is GPT-2 small's shape (width 768, 12 heads, 12 layers, 50257
// tokens), sizing only.
func GPT2Small(ctx, seqs int, attn Attn) Params {
	return Params{Arch: GPT2, Embd: 768, Heads: 12, FF: 3072, Layers: 12, Vocab: 50257, Ctx: ctx, Seqs: seqs,
		Attn: attn, LastOnly: true, SizeOnly: true, Seed: 7}
}

// Shapes lists the graphs ggmlbench and the benchmarks measure: LLaMA-style
// (fused QKV and gate/up, and llama.cpp's split form, "-split") and
// GPT-2-style, several widths, prefill and decode, batch 1 and 8. With
// big, LLaMA-7B and GPT-2-small graphs are included. All are sizing only.
func Shapes(big bool) []Shape {
	var out []Shape
	add := func(p Params, tokens, past int) {
		p.SizeOnly = true
		kind := "prefill"
		if tokens == 1 {
			kind = "decode"
		}
		name := fmt.Sprintf("%s-e%d-l%d-%s%d-b%d-%s", p.Arch, p.Embd, p.Layers, kind, tokens+past, p.Seqs, p.Attn)
		if p.Split {
			name += "-split"
		}
		out = append(out, Shape{Name: name, Params: p, Tokens: tokens, Past: past})
	}
	tiny := Tiny()
	add(tiny, 32, 0)
	for _, w := range []int{512, 1024, 2048} {
		for _, seqs := range []int{1, 8} {
			l := Params{Arch: LLaMA, Embd: w, Heads: w / 64, FF: w * 11 / 4, Layers: 4, Vocab: 32000, Ctx: 256, Seqs: seqs,
				Attn: AttnSoftMax, LastOnly: true, Seed: 7}
			add(l, 128, 0)
			add(l, 1, 127)
			l.Split = true
			add(l, 128, 0)
			add(l, 1, 127)
			g := Params{Arch: GPT2, Embd: w, Heads: w / 64, FF: 4 * w, Layers: 4, Vocab: 50257, Ctx: 256, Seqs: seqs,
				Attn: AttnSoftMax, LastOnly: true, Seed: 7}
			add(g, 128, 0)
			add(g, 1, 127)
		}
	}
	for _, seqs := range []int{1, 8} {
		add(Params{Arch: LLaMA, Embd: 1024, Heads: 16, FF: 2816, Layers: 4, Vocab: 32000, Ctx: 256, Seqs: seqs,
			Attn: AttnFlash, LastOnly: true, Seed: 7}, 128, 0)
		add(Params{Arch: LLaMA, Embd: 1024, Heads: 16, FF: 2816, Layers: 4, Vocab: 32000, Ctx: 256, Seqs: seqs,
			Attn: AttnMaskInf, LastOnly: true, Seed: 7}, 128, 0)
		add(Params{Arch: LLaMA, Embd: 1024, Heads: 16, FF: 2816, Layers: 4, Vocab: 32000, Ctx: 256, Seqs: seqs,
			Attn: AttnFlash, LastOnly: true, Split: true, Seed: 7}, 128, 0)
	}
	if big {
		add(LLaMA7B(512, 1, AttnSoftMax), 512, 0)
		add(LLaMA7B(512, 1, AttnSoftMax), 1, 511)
		add(LLaMA7B(512, 8, AttnSoftMax), 1, 511)
		add(LLaMA7B(512, 1, AttnFlash), 512, 0)
		for _, attn := range []Attn{AttnSoftMax, AttnFlash} {
			p := LLaMA7B(512, 1, attn)
			p.Split = true
			add(p, 512, 0)
		}
		p := LLaMA7B(512, 8, AttnSoftMax)
		p.Split = true
		add(p, 1, 511)
		add(GPT2Small(1024, 1, AttnSoftMax), 1024, 0)
		add(GPT2Small(1024, 8, AttnSoftMax), 1, 1023)
	}
	return out
}
