package plan

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCoarseStartAgreesWithSolve plans random one-engine traces both ways:
// when the coarse greedy start is taken, its placement must be valid for
// the fine problem and no higher than the fine greedy's, and its lower
// bound no higher than the fine problem's.
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
		sol, c, ok := coarseStart(ip)
		if !ok {
			continue
		}
		if !slices.Equal(c.itemOf, d.itemOf) || !slices.Equal(c.shift, d.shift) {
			t.Fatalf("trace %d: coarse and fine derivations disagree on items", i)
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
		if sol.LowerBound > lb {
			t.Fatalf("trace %d: lower bound %d above the fine problem's %d", i, sol.LowerBound, lb)
		}
	}
	t.Logf("coarse start taken on %d traces", taken)
}
