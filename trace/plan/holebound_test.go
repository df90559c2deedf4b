package plan

import (
	"math/rand/v2"
	"testing"
)

// liveRuns returns the maximal runs of item it's bytes live at time tm,
// byte by byte: the oracle's reading of a problem, sharing nothing with
// compile's normalization.
func liveRuns(it Item, tm Time) [][2]int64 {
	live := make([]bool, it.Size)
	for _, pc := range it.Pieces {
		if pc.Start <= tm && tm < pc.End {
			for b := pc.Lo; b < pc.Hi; b++ {
				live[b] = true
			}
		}
	}
	var runs [][2]int64
	for b := int64(0); b < it.Size; b++ {
		if !live[b] {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1][1] == b {
			runs[n-1][1] = b + 1
		} else {
			runs = append(runs, [2]int64{b, b + 1})
		}
	}
	return runs
}

// slowHoleBound is the hole bound computed from its definition at every
// time a piece starts: for each item with two live runs or more, its span
// plus every other item's live run longer than its largest hole.
func slowHoleBound(p *Problem) int64 {
	var best int64
	for _, it := range p.Items {
		for _, pc := range it.Pieces {
			tm := pc.Start
			runs := make([][][2]int64, len(p.Items))
			for j := range p.Items {
				runs[j] = liveRuns(p.Items[j], tm)
			}
			for i, ri := range runs {
				if len(ri) < 2 {
					continue
				}
				var hole int64
				for k := 1; k < len(ri); k++ {
					hole = max(hole, ri[k][0]-ri[k-1][1])
				}
				b := ri[len(ri)-1][1] - ri[0][0]
				for j, rj := range runs {
					for _, r := range rj {
						if j != i && r[1]-r[0] > hole {
							b += r[1] - r[0]
						}
					}
				}
				best = max(best, b)
			}
		}
	}
	return best
}

// exactOptimum is the lowest height of any valid placement, by trying
// every aligned offset of every item below the best height found so far:
// exact for the small problems of the tests, pieces and holes included
// (bruteOptimum's compaction argument holds for whole buffers only).
func exactOptimum(p *Problem) int64 {
	n := len(p.Items)
	a := p.align()
	// Stacking the items at aligned offsets is always valid.
	var best, next int64
	for _, it := range p.Items {
		best = next + it.Size
		next += (it.Size + a - 1) / a * a
	}
	off := make([]int64, n)
	var rec func(i int, h int64)
	rec = func(i int, h int64) {
		if h >= best {
			return
		}
		if i == n {
			best = h
			return
		}
		size := p.Items[i].Size
		for x := int64(0); x+size < best; x += a {
			ok := true
			for j := range i {
				if conflictAt(p, i, x, j, off[j]) {
					ok = false
					break
				}
			}
			if ok {
				off[i] = x
				rec(i+1, max(h, x+size))
			}
		}
	}
	rec(0, 0)
	return best
}

// TestHoleBoundBelowOptimum: on random small problems whose items die piece
// by piece (holes included), the lower bound never exceeds the exact
// optimum, and the hole bound is what proves a good share of them: the
// test fails if it never lifts the bound above the live bytes to the
// optimum.
func TestHoleBoundBelowOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	iters := 1500
	if testing.Short() || raceEnabled {
		iters = 400
	}
	lifted, tight := 0, 0
	for iter := range iters {
		p := holedProblem(rng, 2+rng.IntN(3))
		opt := exactOptimum(p)
		lb, err := LowerBound(p)
		if err != nil {
			t.Fatal(err)
		}
		if lb > opt {
			t.Fatalf("iter %d: lower bound %d above the optimum %d: %+v", iter, lb, opt, p)
		}
		if live := mustCompile(p).liveBound(); lb > live {
			lifted++
			if lb == opt {
				tight++
			}
		}
		sol, err := Solve(p, SolveOptions{Budget: 20e6})
		if err != nil {
			t.Fatal(err)
		}
		if sol.Height < opt || (sol.Proven && sol.Height != opt) {
			t.Fatalf("iter %d: height %d (proven %v), optimum %d", iter, sol.Height, sol.Proven, opt)
		}
	}
	t.Logf("%d problems: the hole bound lifted %d above the live bytes, %d of them to the optimum", iters, lifted, tight)
	if tight == 0 {
		t.Fatal("the hole bound never reached an optimum the live bound misses")
	}
}

// holedProblem draws n items of up to 12 bytes, each cut into up to four
// runs that die at different times, so that items have holes while others
// are live.
func holedProblem(rng *rand.Rand, n int) *Problem {
	p := &Problem{Align: []int64{1, 1, 2}[rng.IntN(3)]}
	for i := range n {
		size := int64(2 + rng.IntN(11))
		it := Item{Name: string(rune('a' + i)), Size: size}
		start := rng.IntN(3)
		lo := int64(0)
		for lo < size {
			hi := min(size, lo+1+rng.Int64N(4))
			it.Pieces = append(it.Pieces, Piece{Lo: lo, Hi: hi, Start: start, End: start + 1 + rng.IntN(4)})
			lo = hi
		}
		p.Items = append(p.Items, it)
	}
	return p
}
