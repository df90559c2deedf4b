package main

import (
	"fmt"
	"testing"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
	"github.com/subarena/subarena/trace/replay"
)

// TestOnlineNotAboveGallocr sweeps LLaMA-style graphs beyond ggmlbench's: widths 512 to
// 4096, flash attention, softmax and an infinity mask, fused and llama.cpp's split form,
// decode and prefills of 32 to 256 tokens, batch 1 and 8 (180 graphs). The online
// Allocator replaying each (subrange-fenced, donation on) needs no more than gallocr's
// buffer. Donating the roped Q and K through a reshape of their matmul outputs (before
// replay's Donations skipped such views) needed 1.095–1.098× gallocr's buffer on 24 of
// the 30 flash-attention graphs in the split form: every prefill and the width-4096 decodes.
func TestOnlineNotAboveGallocr(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds and replays 180 graphs (seconds; a minute under the race detector)")
	}
	n := 0
	for _, w := range []int{512, 1024, 2048, 4096} {
		for _, attn := range []ggmltest.Attn{ggmltest.AttnFlash, ggmltest.AttnSoftMax, ggmltest.AttnMaskInf} {
			for _, split := range []bool{false, true} {
				for _, tokens := range []int{1, 32, 128, 256} {
					for _, seqs := range []int{1, 8} {
						if w == 4096 && seqs == 8 && tokens > 32 {
							continue // the largest graphs add time, not cases
						}
						p := ggmltest.Params{Arch: ggmltest.LLaMA, Embd: w, Heads: w / 64, FF: w * 11 / 4, Layers: 4,
							Vocab: 32000, Ctx: 256, Seqs: seqs, Attn: attn, LastOnly: true, Split: split, SizeOnly: true, Seed: 7}
						past := 0
						if tokens == 1 {
							past = 127
						}
						name := fmt.Sprintf("w%d-%v-split=%v-tokens%d-b%d", w, attn, split, tokens, seqs)
						online, gallocr, err := onlineAndGallocr(p, tokens, past)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if online > gallocr {
							t.Errorf("%s: the online Allocator needs %d B (%.3f×), gallocr %d B",
								name, online, float64(online)/float64(gallocr), gallocr)
						}
						n++
					}
				}
			}
		}
	}
	if n != 180 {
		t.Fatalf("swept %d graphs, want 180", n)
	}
}

// onlineAndGallocr builds the graph of p over tokens after past cached positions and
// returns the online Allocator's HWM replaying it and gallocr's buffer.
func onlineAndGallocr(p ggmltest.Params, tokens, past int) (online, gallocr int64, err error) {
	mg := ggmltest.NewModelGraph(p, tokens, past)
	defer mg.Free()
	a, pl, err := planWith(mg.Graph.CGraph(), ggml.Options{NoRelayout: true})
	if err != nil {
		return 0, 0, err
	}
	defer a.Free()
	prog, err := pl.Trace.Resolve()
	if err != nil {
		return 0, 0, err
	}
	res, err := replay.Run(prog, replay.Options{})
	if err != nil {
		return 0, 0, err
	}
	return res.HWM, mg.Graph.GallocrSize(), nil
}
