package plan

import (
	"math/rand/v2"
	"testing"
)

// TestLiveBoundMatchesCompiled checks the sweep coarseStart uses against the
// compiled lower bound and grain on random problems.
func TestLiveBoundMatchesCompiled(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 300 {
		p := randPieces(rng, 1+rng.IntN(12), i%2 == 0)
		if i%3 == 0 {
			p = randWhole(rng, 1+rng.IntN(12))
		}
		want, err := LowerBound(p)
		if err != nil {
			t.Fatal(err)
		}
		got, grain := liveBound(p)
		if got != want {
			t.Fatalf("problem %d: liveBound %d, LowerBound %d", i, got, want)
		}
		if c := compile(p); c.grain%grain != 0 {
			t.Fatalf("problem %d: grain %d does not divide the compiled grain %d", i, grain, c.grain)
		}
	}
}

// TestCoarseStartAgreesWithSolve plans random one-engine traces both ways:
// when the coarse greedy start is taken, its height must be the fine
// problem's lower bound and no higher than the fine solve's, and valid for
// the fine problem.
func TestCoarseStartAgreesWithSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	taken := 0
	for i := range 150 {
		tr := genTrace(rng, i%2 == 0)
		tr.Engines = tr.Engines[:1]
		for k := range tr.Steps {
			tr.Steps[k].Engine = tr.Engines[0]
		}
		p, err := tr.Resolve()
		if err != nil {
			continue // the one-engine rewrite can drop a wait's reason; skip such traces
		}
		hb, err := happensBefore(p)
		if err != nil {
			t.Fatal(err)
		}
		ip := newInplacer(p, hb, true)
		ip.decide()
		d := derive(ip)
		sol, ok := coarseStart(ip, d)
		if !ok {
			continue
		}
		taken++
		if _, err := Verify(d.prob, sol.Offsets); err != nil {
			t.Fatalf("trace %d: coarse start invalid for the fine problem: %v", i, err)
		}
		fine, err := Solve(d.prob, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sol.Height > fine.Height {
			t.Fatalf("trace %d: coarse start %d above the fine greedy %d", i, sol.Height, fine.Height)
		}
		lb, _ := LowerBound(d.prob)
		if sol.LowerBound != lb {
			t.Fatalf("trace %d: lower bound %d, want %d", i, sol.LowerBound, lb)
		}
	}
	t.Logf("coarse start taken on %d traces", taken)
}
