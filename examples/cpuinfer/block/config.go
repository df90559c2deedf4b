package block

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/subarena/subarena/ranges"
)

// Sentinel errors of the package. Every error it returns matches one of
// these (or an error of package subarena or sync) with errors.Is.
var (
	// ErrInvalidConfig: a Config or Options field is out of range, or the
	// combination cannot run (HoldConsumer with greedy decoding).
	ErrInvalidConfig = errors.New("block: invalid config")
	// ErrLayout: a view handed to a kernel is not a float32 tensor the
	// kernel can read (element size, alignment, shape).
	ErrLayout = errors.New("block: view is not a float32 tensor of the expected shape")
	// ErrMismatch: two results are not bit-identical.
	ErrMismatch = errors.New("block: results differ")
	// ErrLeak: after every op completed and every buffer was released, the
	// Allocator still held bytes, buffers or pending users.
	ErrLeak = errors.New("block: allocator not empty after the run")
)

// Config is the shape of the model and of the run. All sizes are counts of
// elements, tokens or positions; every tensor is float32.
type Config struct {
	Dim    int // model width D
	Heads  int // attention heads H; the head width D/H must be even (RoPE rotates pairs)
	FFN    int // feed-forward width F of the gate/up and down projections
	Vocab  int // vocabulary V: rows of the embedding table, columns of the logits
	Layers int // decoder blocks, each with its own weights and KV cache

	Prompt int // T: tokens of the prefill step
	Steps  int // S: decode steps after the prefill, one token each
	Chunk  int // KV-cache chunk in positions: finished chunks are offloaded to host

	Seed uint64 // weights, prompt and (Forced) decode tokens
	// Forced feeds decode tokens drawn from Seed (teacher forcing) instead
	// of each step's greedy argmax. Nothing then waits for the consumer
	// engine, which is what makes HoldConsumer possible.
	Forced bool
}

// Positions is T+S, the number of positions the run feeds (and the rows of
// each layer's KV cache).
func (c Config) Positions() int { return c.Prompt + c.Steps }

// HeadDim is D/H.
func (c Config) HeadDim() int { return c.Dim / c.Heads }

// limit bounds every size so that byte counts stay far from overflow.
const limit = 1 << 16

// Validate reports the first field out of range, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	check := func(name string, v, lo int) error {
		if v < lo || v > limit {
			return fmt.Errorf("%w: %s = %d, want [%d, %d]", ErrInvalidConfig, name, v, lo, limit)
		}
		return nil
	}
	for _, f := range []struct {
		name  string
		v, lo int
	}{
		{"dim", c.Dim, 2}, {"heads", c.Heads, 1}, {"ffn", c.FFN, 1}, {"vocab", c.Vocab, 2},
		{"layers", c.Layers, 1}, {"prompt", c.Prompt, 1}, {"steps", c.Steps, 0}, {"chunk", c.Chunk, 1},
	} {
		if err := check(f.name, f.v, f.lo); err != nil {
			return err
		}
	}
	if c.Dim%c.Heads != 0 || c.HeadDim()%2 != 0 {
		return fmt.Errorf("%w: dim %d must split into %d heads of even width", ErrInvalidConfig, c.Dim, c.Heads)
	}
	if c.Positions() > limit {
		return fmt.Errorf("%w: prompt+steps = %d exceeds %d", ErrInvalidConfig, c.Positions(), limit)
	}
	return nil
}

// presets are named sizes: tiny runs in CI under the race detector in well
// under a second per policy; small is the default of the command; medium and
// large take seconds to minutes.
var presets = map[string]Config{
	"tiny":   {Dim: 32, Heads: 2, FFN: 64, Vocab: 64, Layers: 2, Prompt: 12, Steps: 6, Chunk: 4},
	"small":  {Dim: 64, Heads: 4, FFN: 256, Vocab: 256, Layers: 2, Prompt: 32, Steps: 16, Chunk: 16},
	"medium": {Dim: 256, Heads: 8, FFN: 1024, Vocab: 1024, Layers: 4, Prompt: 128, Steps: 32, Chunk: 32},
	"large":  {Dim: 512, Heads: 8, FFN: 2048, Vocab: 4096, Layers: 4, Prompt: 256, Steps: 64, Chunk: 64},
}

// Preset returns the named size (tiny, small, medium, large) with Seed 1.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		names := make([]string, 0, len(presets))
		for n := range presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Config{}, fmt.Errorf("%w: unknown size %q (want one of %s)", ErrInvalidConfig, name, strings.Join(names, ", "))
	}
	c.Seed = 1
	return c, nil
}

// stepTokens returns n, the tokens fed at step s (T for the prefill, 1 for
// a decode step), and p0, the position of the first of them.
func (c Config) stepTokens(s int) (n, p0 int) {
	if s == 0 {
		return c.Prompt, 0
	}
	return 1, c.Prompt + s - 1
}

// chunks is the number of KV chunks per layer.
func (c Config) chunks() int { return (c.Positions() + c.Chunk - 1) / c.Chunk }

// NoReuseBytes is the arena a run needs if no byte is ever reused: the sum
// of every allocation the arena run makes, each rounded up to granule (a
// power of two). It is the default capacity, so a run never fails for
// space whatever the policy and timing; the high-water mark says what was
// actually needed.
func (c Config) NoReuseBytes(granule int64) int64 {
	round := func(elems int) int64 { return ranges.Granule(granule).Up(int64(elems) * 4) }
	var total int64
	for s := 0; s <= c.Steps; s++ {
		n, _ := c.stepTokens(s)
		d := c.Dim
		total += round(n * d) // x
		total += int64(c.Layers) * (round(n*d) + round(n*3*d) + round(n*d) + round(n*d) + round(n*d) + round(n*2*c.FFN) + round(n*d))
		total += round(n*d) + round(n*c.Vocab) // final norm, logits
	}
	total += int64(c.Layers*c.chunks()) * round(2*c.Chunk*c.Dim)
	return total
}
