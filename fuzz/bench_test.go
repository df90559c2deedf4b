package fuzz

import (
	"testing"

	"github.com/subarena/subarena"
)

// BenchmarkGenerate measures generating one random program of the default
// shape (24 ops).
func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		Generate(NewRand(uint64(i)), DefaultConfig())
	}
}

// BenchmarkRun measures one checked run of a random program under the
// default policy with a random interleaving: every step followed by every
// invariant check. One op of the benchmark is one run.
func BenchmarkRun(b *testing.B) {
	progs := make([]*Program, 64)
	for i := range progs {
		progs[i] = Generate(NewRand(uint64(i)), DefaultConfig())
	}
	if r := Run(progs[0], subarena.SubrangeFenced, NewRandomScheduler(NewRand(1))); r.Failure != nil {
		b.Fatal(r.Failure.Report())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		Run(progs[i%len(progs)], subarena.SubrangeFenced, NewRandomScheduler(NewRand(uint64(i))))
	}
}

// BenchmarkExploreScenario measures enumerating every interleaving of the
// qkv-slow-copy scenario under the default policy.
func BenchmarkExploreScenario(b *testing.B) {
	p := Scenarios()[2].Program
	b.ReportAllocs()
	for range b.N {
		if r := Explore(p, subarena.SubrangeFenced, ExploreOptions{}); r.Failures() > 0 {
			b.Fatal(r.First.Report())
		}
	}
}
