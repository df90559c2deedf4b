package plan

import (
	"strings"
	"testing"
)

// TestGreedyUnalignedSizesLast: an item whose size is not a multiple of
// the alignment, first in every greedy order (largest, longest-lived,
// most conflicting), pads the items above it to the alignment; placed
// last it sits on top, unpadded, at the lower bound.
func TestGreedyUnalignedSizesLast(t *testing.T) {
	p := &Problem{Align: 8, Items: []Item{
		Whole("x", 12, 0, 3),
		Whole("y1", 8, 0, 1),
		Whole("y2", 8, 1, 2),
		Whole("y3", 8, 2, 3),
	}}
	c := mustCompile(p)
	g := newGreedy(c)
	for o := range numGreedyOrders {
		for r := range numFitRules {
			if h := g.run(o, r); h != 24 {
				t.Fatalf("%s: height %d, want 24 (x padded to 16 below the others)", variantNames[o][r], h)
			}
		}
	}
	if opt := exactOptimum(p); opt != 20 {
		t.Fatalf("optimum %d, want 20", opt)
	}
	sol, err := Solve(p, SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sol.Height != 20 || !sol.Proven || !strings.HasSuffix(sol.Method, "unaligned sizes last") {
		t.Fatalf("height %d proven %v by %q, want 20 proven with unaligned sizes last", sol.Height, sol.Proven, sol.Method)
	}
	// Without unaligned sizes there is nothing to retry.
	if g.unalignedLast(bySize) == nil {
		t.Fatal("no unaligned item found")
	}
	p.Items[0] = Whole("x", 16, 0, 3)
	if newGreedy(mustCompile(p)).unalignedLast(bySize) != nil {
		t.Fatal("an order retried with every size aligned")
	}
}
