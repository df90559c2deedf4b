package plan

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randWhole returns a random whole-buffer problem small enough for the
// brute-force oracle.
func randWhole(rng *rand.Rand, n int) *Problem {
	p := &Problem{Align: []int64{0, 1, 2, 4}[rng.IntN(4)]}
	for i := range n {
		s := rng.IntN(7)
		e := s + 1 + rng.IntN(4)
		p.Items = append(p.Items, Whole(string(rune('a'+i)), int64(1+rng.IntN(9)), s, e))
	}
	return p
}

// randPieces returns a random problem with subrange lifetimes: each item's
// bytes are cut into up to three ranges living over different windows.
func randPieces(rng *rand.Rand, n int, concurrent bool) *Problem {
	p := &Problem{Align: []int64{0, 1, 2}[rng.IntN(3)]}
	for i := range n {
		size := int64(2 + rng.IntN(8))
		it := Item{Name: string(rune('a' + i)), Size: size}
		cut := []int64{0, size}
		for range rng.IntN(3) {
			cut = append(cut, 1+rng.Int64N(size-1))
		}
		slices.Sort(cut)
		cut = slices.Compact(cut)
		for k := 0; k+1 < len(cut); k++ {
			if rng.IntN(5) == 0 {
				continue // bytes nobody uses
			}
			s := rng.IntN(6)
			it.Pieces = append(it.Pieces, Piece{Lo: cut[k], Hi: cut[k+1], Start: s, End: s + 1 + rng.IntN(4)})
		}
		p.Items = append(p.Items, it)
	}
	if concurrent {
		for range rng.IntN(4) {
			a, b := rng.IntN(n), rng.IntN(n)
			if a == b || len(p.Items[a].Pieces) == 0 || len(p.Items[b].Pieces) == 0 {
				continue
			}
			p.Concurrent = append(p.Concurrent, PiecePair{
				A: PieceRef{a, rng.IntN(len(p.Items[a].Pieces))},
				B: PieceRef{b, rng.IntN(len(p.Items[b].Pieces))}})
		}
	}
	return p
}

// bruteOptimum is the optimal height of a whole-buffer problem: the best,
// over all item orders, of placing each at its lowest feasible aligned
// offset. Every compacted placement arises this way.
func bruteOptimum(p *Problem) int64 {
	n := len(p.Items)
	a := p.align()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	best := int64(1) << 62
	off := make([]int64, n)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			var h int64
			for i := range n {
				h = max(h, off[i]+p.Items[i].Size)
			}
			best = min(best, h)
			return
		}
		for j := k; j < n; j++ {
			perm[k], perm[j] = perm[j], perm[k]
			i := perm[k]
			x := int64(0)
			for moved := true; moved; {
				moved = false
				for _, q := range perm[:k] {
					if conflictAt(p, i, x, q, off[q]) {
						x = (off[q] + p.Items[q].Size + a - 1) / a * a
						moved = true
					}
				}
			}
			off[i] = x
			rec(k + 1)
			perm[k], perm[j] = perm[j], perm[k]
		}
	}
	rec(0)
	return best
}

// conflictAt is the slow definition of a conflict between items i at x and
// j at y: some pair of their pieces is live together (or listed as
// concurrent) and shares a byte.
func conflictAt(p *Problem, i int, x int64, j int, y int64) bool {
	for ki, a := range p.Items[i].Pieces {
		for kj, b := range p.Items[j].Pieces {
			live := a.Start < b.End && b.Start < a.End
			for _, pp := range p.Concurrent {
				if (pp.A == PieceRef{i, ki} && pp.B == PieceRef{j, kj}) || (pp.A == PieceRef{j, kj} && pp.B == PieceRef{i, ki}) {
					live = true
				}
			}
			if live && x+a.Lo < y+b.Hi && y+b.Lo < x+a.Hi {
				return true
			}
		}
	}
	return false
}

// slowVerify checks a placement pair by pair with conflictAt.
func slowVerify(p *Problem, off []int64) bool {
	for i := range p.Items {
		for j := i + 1; j < len(p.Items); j++ {
			if conflictAt(p, i, off[i], j, off[j]) {
				return false
			}
		}
	}
	return true
}

// TestSolveOptimalOnSmallWholeProblems compares the planner with the
// brute-force optimum on random whole-buffer problems.
func TestSolveOptimalOnSmallWholeProblems(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range raceIters(300, 60) {
		p := randWhole(rng, 1+rng.IntN(7))
		want := bruteOptimum(p)
		sol, err := Solve(p, SolveOptions{Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if !slowVerify(p, sol.Offsets) {
			t.Fatalf("iter %d: invalid placement %v", iter, sol.Offsets)
		}
		if sol.Height != want {
			t.Fatalf("iter %d: height %d, optimum %d (%s) for %+v", iter, sol.Height, want, sol.Method, p)
		}
		if sol.LowerBound > want {
			t.Fatalf("iter %d: lower bound %d above optimum %d", iter, sol.LowerBound, want)
		}
		if !sol.Proven {
			t.Fatalf("iter %d: optimum %d not proven: %+v lb %d grain %d", iter, want, sol, sol.LowerBound, mustCompile(p).grain)
		}
	}
}

// TestSearchInvariantsEveryStep runs decision searches at several
// capacities with the invariant checker after every place and undo, on
// whole, subrange and concurrent problems, and checks every placement found.
func TestSearchInvariantsEveryStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range raceIters(150, 40) {
		var p *Problem
		switch iter % 3 {
		case 0:
			p = randWhole(rng, 2+rng.IntN(8))
		case 1:
			p = randPieces(rng, 2+rng.IntN(8), false)
		default:
			p = randPieces(rng, 2+rng.IntN(8), true)
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c := mustCompile(p)
		if err := c.CheckInvariants(); err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		s := newSearcher(c)
		var stepErr error
		s.afterStep = func() {
			if stepErr == nil {
				stepErr = s.CheckInvariants()
			}
		}
		lb := c.lowerBound()
		g := newGreedy(c)
		_, gh, _ := g.best()
		for capacity := lb; capacity <= gh; capacity++ {
			st := s.decide(capacity, time.Now().Add(time.Minute), nil, nil, DefaultHeuristics)
			if stepErr != nil {
				t.Fatalf("iter %d cap %d: %v", iter, capacity, stepErr)
			}
			if st == timedOut {
				t.Fatalf("iter %d: tiny search timed out", iter)
			}
			if st == found {
				if h := heightOf(c, s.solution); h > capacity {
					t.Fatalf("iter %d: found height %d above capacity %d", iter, h, capacity)
				}
				if !slowVerify(p, s.solution) {
					t.Fatalf("iter %d cap %d: invalid placement %v", iter, capacity, s.solution)
				}
				if _, err := Verify(p, s.solution); err != nil {
					t.Fatalf("iter %d: Verify rejects a valid placement: %v", iter, err)
				}
				break
			}
			if c.solidAll && capacity == gh {
				t.Fatalf("iter %d: no placement at the greedy height %d", iter, gh)
			}
		}
	}
}

// TestGreedyAndSolveValidOnSubrangeProblems checks greedy and search
// placements of subrange and concurrent problems with the slow oracle.
func TestGreedyAndSolveValidOnSubrangeProblems(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range raceIters(300, 60) {
		p := randPieces(rng, 1+rng.IntN(9), iter%2 == 0)
		c := mustCompile(p)
		g := newGreedy(c)
		for o := range numGreedyOrders {
			for r := range numFitRules {
				g.run(o, r)
				if err := g.CheckInvariants(); err != nil {
					t.Fatalf("iter %d greedy %d/%d: %v", iter, o, r, err)
				}
				if !slowVerify(p, g.offsets) {
					t.Fatalf("iter %d greedy %d/%d: invalid placement", iter, o, r)
				}
			}
		}
		sol, err := Solve(p, SolveOptions{Budget: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !slowVerify(p, sol.Offsets) {
			t.Fatalf("iter %d: invalid placement", iter)
		}
		if sol.Height < sol.LowerBound {
			t.Fatalf("iter %d: height %d below lower bound %d", iter, sol.Height, sol.LowerBound)
		}
	}
}

// TestVerifyAgainstOracle perturbs placements and compares Verify's verdict
// with the slow pairwise definition.
func TestVerifyAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	bad := 0
	for iter := range 2000 {
		p := randPieces(rng, 1+rng.IntN(6), iter%2 == 0)
		p.Align = 0
		off := make([]int64, len(p.Items))
		for i := range off {
			off[i] = rng.Int64N(12)
		}
		_, err := Verify(p, off)
		want := slowVerify(p, off)
		if (err == nil) != want {
			t.Fatalf("iter %d: Verify says %v, oracle says valid=%v", iter, err, want)
		}
		if err != nil {
			bad++
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("iter %d: error %v does not match ErrConflict", iter, err)
			}
		}
	}
	if bad == 0 || bad == 2000 {
		t.Fatalf("degenerate test: %d of 2000 placements invalid", bad)
	}
}

// TestLowerBoundAgainstOracle compares the lower bound with a count of live
// bytes at every time.
func TestLowerBoundAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 500 {
		p := randPieces(rng, 1+rng.IntN(8), false)
		var want int64
		for tm := range 12 {
			var live int64
			for _, it := range p.Items {
				var byteLive = make([]bool, it.Size)
				for _, pc := range it.Pieces {
					if pc.Start <= tm && tm < pc.End {
						for b := pc.Lo; b < pc.Hi; b++ {
							byteLive[b] = true
						}
					}
				}
				for _, l := range byteLive {
					if l {
						live++
					}
				}
			}
			want = max(want, live)
		}
		for _, it := range p.Items {
			want = max(want, it.Size)
		}
		if got := mustCompile(p).liveBound(); got != want {
			t.Fatalf("live bound %d, want %d", got, want)
		}
		want = max(want, slowHoleBound(p))
		got, err := LowerBound(p)
		if err != nil || got != want {
			t.Fatalf("lower bound %d (%v), want %d", got, err, want)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	good := Whole("a", 4, 0, 2)
	cases := []struct {
		name string
		p    *Problem
	}{
		{"nil", nil},
		{"alignment not a power of two", &Problem{Align: 3, Items: []Item{good}}},
		{"negative alignment", &Problem{Align: -4, Items: []Item{good}}},
		{"zero size", &Problem{Items: []Item{{Name: "z", Size: 0}}}},
		{"huge size", &Problem{Items: []Item{{Name: "z", Size: maxSize + 1}}}},
		{"piece outside item", &Problem{Items: []Item{{Name: "a", Size: 4, Pieces: []Piece{{Lo: 2, Hi: 5, Start: 0, End: 1}}}}}},
		{"empty piece", &Problem{Items: []Item{{Name: "a", Size: 4, Pieces: []Piece{{Lo: 2, Hi: 2, Start: 0, End: 1}}}}}},
		{"empty window", &Problem{Items: []Item{{Name: "a", Size: 4, Pieces: []Piece{{Lo: 0, Hi: 4, Start: 3, End: 3}}}}}},
		{"negative time", &Problem{Items: []Item{{Name: "a", Size: 4, Pieces: []Piece{{Lo: 0, Hi: 4, Start: -1, End: 3}}}}}},
		{"unknown concurrent piece", &Problem{Items: []Item{good, good}, Concurrent: []PiecePair{{A: PieceRef{0, 0}, B: PieceRef{1, 1}}}}},
		{"concurrent within one item", &Problem{Items: []Item{good}, Concurrent: []PiecePair{{A: PieceRef{0, 0}, B: PieceRef{0, 0}}}}},
	}
	for _, tc := range cases {
		if err := tc.p.Validate(); !errors.Is(err, ErrInvalidProblem) {
			t.Errorf("%s: Validate = %v, want ErrInvalidProblem", tc.name, err)
		}
		if _, err := Solve(tc.p, SolveOptions{}); !errors.Is(err, ErrInvalidProblem) {
			t.Errorf("%s: Solve = %v, want ErrInvalidProblem", tc.name, err)
		}
	}
	p := &Problem{Items: []Item{good}}
	if _, err := Solve(p, SolveOptions{Budget: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative budget: %v", err)
	}
	if _, err := Verify(p, nil); !errors.Is(err, ErrInvalidProblem) {
		t.Errorf("missing offsets: %v", err)
	}
	if _, err := Verify(&Problem{Align: 4, Items: []Item{good}}, []int64{2}); !errors.Is(err, ErrConflict) {
		t.Errorf("unaligned offset: %v", err)
	}
}

// TestSolveStopsAndHonoursCapacity checks the decision-mode and
// cancellation paths.
func TestSolveStopsAndHonoursCapacity(t *testing.T) {
	p := loadInstance(t, "D")
	stop := make(chan struct{})
	close(stop)
	start := time.Now()
	sol, err := Solve(p, SolveOptions{Budget: time.Minute, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("a stopped search ran %v", el)
	}
	checkGrid(t, p, sol.Offsets)
	// A capacity the greedy start already meets ends the work at once.
	sol2, err := Solve(p, SolveOptions{Budget: time.Minute, Capacity: sol.Height})
	if err != nil || sol2.Height > sol.Height || sol2.Probes != 0 {
		t.Fatalf("capacity %d: height %d, %d probes, %v", sol.Height, sol2.Height, sol2.Probes, err)
	}
}

func TestEmptyAndPiecelessItems(t *testing.T) {
	sol, err := Solve(&Problem{}, SolveOptions{Budget: time.Second})
	if err != nil || sol.Height != 0 || len(sol.Offsets) != 0 {
		t.Fatalf("empty problem: %+v %v", sol, err)
	}
	p := &Problem{Items: []Item{{Name: "idle", Size: 8}, Whole("a", 4, 0, 1)}}
	sol, err = Solve(p, SolveOptions{Budget: time.Second})
	if err != nil || sol.Height != 8 || !sol.Proven {
		t.Fatalf("pieceless item: %+v %v", sol, err)
	}
}
