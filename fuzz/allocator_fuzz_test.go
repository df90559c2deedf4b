package fuzz

import (
	"testing"

	"github.com/subarena/subarena"
)

// fuzzConfig is the program shape FuzzAllocator decodes: small enough that
// one input runs in about a millisecond, with every feature on.
func fuzzConfig() GenConfig {
	c := DefaultConfig()
	c.Ops = 12
	return c
}

// FuzzAllocator decodes the fuzzer's bytes into a program and an
// interleaving (NewByteSource) and runs it under each safe policy with
// every check: byte versions, the Allocator's, Timeline's and simulation's
// invariants, and the model's oracles. Any failure prints the full
// counterexample.
//
//	go test -fuzz=FuzzAllocator ./fuzz
func FuzzAllocator(f *testing.F) {
	for i := range 8 {
		seed := make([]byte, 32+16*i)
		for j := range seed {
			seed[j] = byte(j*31 + i*17 + j*j)
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := NewByteSource(data)
		p := Generate(src, fuzzConfig())
		if err := p.Validate(); err != nil {
			t.Fatalf("generated a malformed program: %v\n%v", err, p)
		}
		for _, pol := range subarena.SafePolicies() {
			r := Run(p, pol, NewRandomScheduler(src))
			if r.Failure != nil {
				t.Fatalf("%s", r.Failure.Report())
			}
		}
	})
}
