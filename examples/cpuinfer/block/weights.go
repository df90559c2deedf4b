package block

import (
	"math"
	"math/rand/v2"
)

// LayerWeights are one decoder block's parameters, dense row-major Go
// slices (weights are not activations: they live outside the arena).
type LayerWeights struct {
	Norm1  []float32 // [D] RMSNorm scale before attention
	QKV    []float32 // [D, 3D] fused Q|K|V projection
	Out    []float32 // [D, D] attention output projection
	Norm2  []float32 // [D] RMSNorm scale before the feed-forward
	GateUp []float32 // [D, 2F] fused gate|up projection
	Down   []float32 // [F, D] down projection
}

// Weights are the model's parameters and the tables every run shares.
type Weights struct {
	Config Config
	Embed  []float32 // [V, D] token embeddings
	Layers []LayerWeights
	Norm   []float32 // [D] final RMSNorm scale
	Head   []float32 // [D, V] LM head
	// Cos and Sin are the RoPE tables, [positions, D/H/2]: the rotation of
	// pair p at position t is t·θ^(-2p/(D/H)) with θ = 10000, computed in
	// float64 and rounded once.
	Cos, Sin []float32
	// Prompt is the T prefill tokens; ForcedTokens the S decode tokens fed
	// when Config.Forced (drawn from the seed either way, so the prompt does
	// not depend on Forced).
	Prompt       []int
	ForcedTokens []int
}

// NewWeights draws every parameter from Config.Seed: uniform in
// [-1/√fan_in, 1/√fan_in] for projections, [0.5, 1.5) for RMSNorm scales,
// [-1, 1) for embeddings. Two calls with the same Config return identical
// weights.
func NewWeights(c Config) (*Weights, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5ab_a2e4a))
	uniform := func(n int, scale float64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32((2*rng.Float64() - 1) * scale)
		}
		return out
	}
	norm := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(0.5 + rng.Float64())
		}
		return out
	}
	d, f := c.Dim, c.FFN
	inv := func(fanIn int) float64 { return 1 / math.Sqrt(float64(fanIn)) }
	w := &Weights{Config: c, Embed: uniform(c.Vocab*d, 1)}
	for range c.Layers {
		w.Layers = append(w.Layers, LayerWeights{
			Norm1:  norm(d),
			QKV:    uniform(d*3*d, inv(d)),
			Out:    uniform(d*d, inv(d)),
			Norm2:  norm(d),
			GateUp: uniform(d*2*f, inv(d)),
			Down:   uniform(f*d, inv(f)),
		})
	}
	w.Norm = norm(d)
	w.Head = uniform(d*c.Vocab, inv(d))

	half := c.HeadDim() / 2
	w.Cos = make([]float32, c.Positions()*half)
	w.Sin = make([]float32, c.Positions()*half)
	for t := range c.Positions() {
		for p := range half {
			angle := float64(t) * math.Pow(10000, -float64(2*p)/float64(c.HeadDim()))
			w.Cos[t*half+p] = float32(math.Cos(angle))
			w.Sin[t*half+p] = float32(math.Sin(angle))
		}
	}
	w.Prompt = make([]int, c.Prompt)
	for i := range w.Prompt {
		w.Prompt[i] = rng.IntN(c.Vocab)
	}
	w.ForcedTokens = make([]int, c.Steps)
	for i := range w.ForcedTokens {
		w.ForcedTokens[i] = rng.IntN(c.Vocab)
	}
	return w, nil
}
