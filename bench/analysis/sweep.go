package analysis

import (
	"fmt"
	"io"
	"math"

	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace"
)

// generator builds one workload from a seed.
type generator struct {
	Name string
	Gen  func(seed uint64) (*trace.Trace, error)
}

// sweepGenerators are BenchmarkPolicySweep's generators (the quick settings
// of bench.Workloads, and the CNN at Inception-v3's width over two frames),
// rebuilt from the exported configurations.
func sweepGenerators() []generator {
	llama := bench.LlamaSmall
	llama.Batch, llama.Prompt, llama.Chunk, llama.Decode = 16, 16, 16, 4
	batching := bench.BatchingSmall
	batching.Model.Layers, batching.Requests, batching.MaxSeqs, batching.TokenBudget = 1, 12, 6, 48
	cnn := bench.CNNSmall
	cnn.Frames, cnn.Blocks = 2, 2
	random := bench.RandomSmall
	random.Programs, random.Ops = 2, 100
	return []generator{
		{"llama-engines", func(s uint64) (*trace.Trace, error) { c := llama; c.Seed = s; return bench.LlamaEngines(c) }},
		{"batching", func(s uint64) (*trace.Trace, error) { c := batching; c.Seed = s; return bench.Batching(c) }},
		{"cnn-concat", func(s uint64) (*trace.Trace, error) { c := cnn; c.Seed = s; return bench.CNN(c) }},
		{"cnn-inception-v3", func(s uint64) (*trace.Trace, error) {
			c := bench.CNNInceptionV3
			c.Frames, c.Seed = 2, s
			return bench.CNN(c)
		}},
		{"random", func(s uint64) (*trace.Trace, error) { c := random; c.Seed = s; return bench.Random(c) }},
	}
}

// PrintSweep runs each idea on seeds 1..seeds of every generator, under
// both policies, with the Allocator's two fits where the idea uses the
// Allocator's placement, and prints per generator: the mean and worst
// HWM/LiveLB under subrange-fenced, and the (seed, fit) cells where
// subrange-fenced needs more than whole-fenced.
func PrintSweep(w io.Writer, ideas []Idea, seeds int) error {
	gens := sweepGenerators()
	fmt.Fprintf(w, "seeds 1-%d; per generator: mean / worst HWM/LiveLB (subrange-fenced), cells with sub > whole\n", seeds)
	fmt.Fprintf(w, "%-28s", "idea")
	for _, g := range gens {
		fmt.Fprintf(w, " %22s", g.Name)
	}
	fmt.Fprintln(w)
	type cell struct {
		hosts []host
	}
	cache := make([][]cell, len(gens))
	for gi, g := range gens {
		for s := 1; s <= seeds; s++ {
			t, err := g.Gen(uint64(s))
			if err != nil {
				return err
			}
			p, err := t.Resolve()
			if err != nil {
				return err
			}
			in, err := NewInfo(p)
			if err != nil {
				return err
			}
			h, err := hostVariants(in)
			if err != nil {
				return err
			}
			cache[gi] = append(cache[gi], cell{h})
		}
	}
	for _, id := range ideas {
		fmt.Fprintf(w, "%-28s", id.Name)
		for gi := range gens {
			var sum, worst float64
			var n, bad, cells int
			for _, c := range cache[gi] {
				fits := []*namedPlacer{id.placer}
				if id.placer.New == nil {
					pl := placers()
					fits = []*namedPlacer{&pl[0], &pl[1]} // lean, fast
				}
				for _, f := range fits {
					v := id
					v.placer = f
					sub, err := runIdea(c.hosts, v, false)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", id.Name, gens[gi].Name, err)
					}
					whole, err := runIdea(c.hosts, v, true)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", id.Name, gens[gi].Name, err)
					}
					sum += sub.Ratio
					n++
					worst = math.Max(worst, sub.Ratio)
					cells++
					if sub.Ratio > whole.Ratio+1e-12 {
						bad++
					}
				}
			}
			fmt.Fprintf(w, "   %6.3f / %6.3f %2d/%-2d", sum/float64(n), worst, bad, cells)
		}
		fmt.Fprintln(w)
	}
	return nil
}
