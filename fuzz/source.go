package fuzz

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
)

// Source is where the generator and the random scheduler take their
// decisions from. Intn returns a value in [0, n) for n > 0 (0 for n <= 0).
// Two sources with the same inputs give the same decisions, so a program
// and an interleaving are reproducible from a seed (or from fuzz bytes).
type Source interface {
	Intn(n int) int
}

// NewRand returns a Source drawing from a PCG generator seeded with seed.
func NewRand(seed uint64) Source {
	return &randSource{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

type randSource struct{ r *rand.Rand }

func (s *randSource) Intn(n int) int {
	if n <= 0 {
		return 0
	}
	return s.r.IntN(n)
}

// NewByteSource returns a Source that decodes its decisions from data, the
// way a fuzz target turns the fuzzer's bytes into a program: each decision
// consumes one byte (two when n > 256). Once data is exhausted the decisions
// come from a PCG generator seeded with a hash of data, so short inputs
// still describe complete programs.
func NewByteSource(data []byte) Source {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return &byteSource{data: data, rest: NewRand(h.Sum64())}
}

type byteSource struct {
	data []byte
	pos  int
	rest Source
}

func (s *byteSource) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	if n <= 256 && s.pos < len(s.data) {
		b := s.data[s.pos]
		s.pos++
		return int(b) % n
	}
	if n > 256 && s.pos+2 <= len(s.data) {
		v := binary.LittleEndian.Uint16(s.data[s.pos:])
		s.pos += 2
		return int(v) % n
	}
	return s.rest.Intn(n)
}

// chance reports true with probability pct/100.
func chance(src Source, pct int) bool { return src.Intn(100) < pct }

// between returns a value in [lo, hi].
func between(src Source, lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + src.Intn(hi-lo+1)
}
