package bench

// SplitMix64 is the splitmix64 generator every workload draws from. The zero
// value is the generator with seed 0; use NewSplitMix64(42) for the workloads.
type SplitMix64 struct {
	s uint64 // state: seed plus k·0x9E3779B97F4A7C15 after k draws
}

// NewSplitMix64 returns a generator with the given seed.
func NewSplitMix64(seed uint64) SplitMix64 { return SplitMix64{s: seed} }

// Next advances the state and returns the next output.
func (g *SplitMix64) Next() uint64 {
	g.s += 0x9E3779B97F4A7C15
	z := g.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// hashInit is the starting value of the trace and offset fingerprints, an
// FNV-1a-style hash over 64-bit values: h0 = hashInit, then h = mix(h, v).
const hashInit uint64 = 0xCBF29CE484222325

// mix folds v into the fingerprint h.
func mix(h, v uint64) uint64 { return (h ^ v) * 0x100000001B3 }

// failedOffset is what an offset hash mixes for a failed allocation.
const failedOffset uint64 = 0xFFFFFFFFFFFFFFFF
