package fuzz

import (
	"testing"

	"github.com/subarena/subarena/internal/invariants"
)

// TestGenerateWellFormed checks, with the independent Validate, that
// generated programs are well-formed and race-free for every configuration.
func TestGenerateWellFormed(t *testing.T) {
	cfgs := map[string]GenConfig{"default": DefaultConfig(), "small": SmallConfig(), "stress": StressConfig()}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			n := uint64(4000 / cfg.Ops)
			if invariants.RaceEnabled {
				n /= 10
			}
			for seed := uint64(0); seed < n; seed++ {
				p := Generate(NewRand(seed), cfg)
				if err := p.Validate(); err != nil {
					t.Fatalf("seed %d: %v\n%v", seed, err, p)
				}
				if len(p.Ops) != cfg.Ops {
					t.Fatalf("seed %d: %d ops, want %d", seed, len(p.Ops), cfg.Ops)
				}
			}
		})
	}
}
