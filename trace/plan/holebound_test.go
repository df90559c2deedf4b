package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
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
// time a piece starts or ends: for each item with two live runs or more,
// its span plus every other item's live run longer than its largest hole
// or unable to hide in any of its holes (hidesIn).
func slowHoleBound(p *Problem) int64 { return slowHoleBoundOf(p, true) }

// slowHoleBoundOf is slowHoleBound, counting the short runs that cannot
// hide only if hiding is set (unset, every short run is taken to hide).
func slowHoleBoundOf(p *Problem, hiding bool) int64 {
	var best int64
	for _, it := range p.Items {
		for _, pc := range it.Pieces {
			for _, tm := range [2]Time{pc.Start, pc.End} {
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
							if j != i && (r[1]-r[0] > hole || hiding && !hidesIn(p, i, ri, j, r)) {
								b += r[1] - r[0]
							}
						}
					}
					best = max(best, b)
				}
			}
		}
	}
	return best
}

// hidesIn reports whether run r of item j can lie inside a hole between
// runs ri of item i at some aligned relative offset at which the two items
// do not conflict at any time, trying every offset.
func hidesIn(p *Problem, i int, ri [][2]int64, j int, r [2]int64) bool {
	a := p.align()
	const base = 1 << 20 // a multiple of every alignment the tests use
	for k := 1; k < len(ri); k++ {
		hl, hh := ri[k-1][1], ri[k][0]
		for d := (hl - r[0]) / a * a; d+r[1] <= hh; d += a {
			if hl <= d+r[0] && !conflictAt(p, i, base, j, base+d) {
				return true
			}
		}
	}
	return false
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
	iters := testutil.Count(1500, 400)
	lifted, tight, hiding := 0, 0, 0
	for iter := range iters {
		p := holedProblem(rng, 2+rng.IntN(3))
		if iter%2 == 1 {
			roughen(rng, p)
		}
		opt := exactOptimum(p)
		lb, err := LowerBound(p)
		if err != nil {
			t.Fatal(err)
		}
		if lb > opt {
			t.Fatalf("iter %d: lower bound %d above the optimum %d: %+v", iter, lb, opt, p)
		}
		if hb, slow := mustCompile(p).holeBound(), slowHoleBound(p); hb != slow {
			t.Fatalf("iter %d: hole bound %d, from its definition %d: %+v", iter, hb, slow, p)
		}
		live := mustCompile(p).liveBound()
		if lb > live {
			lifted++
			if lb == opt {
				tight++
			}
		}
		if lb == opt && max(live, slowHoleBoundOf(p, false)) < opt {
			hiding++
		}
		sol, err := Solve(p, SolveOptions{Budget: 20e6})
		if err != nil {
			t.Fatal(err)
		}
		if sol.Height < opt || (sol.Proven && sol.Height != opt) {
			t.Fatalf("iter %d: height %d (proven %v), optimum %d", iter, sol.Height, sol.Proven, opt)
		}
	}
	t.Logf("%d problems: the hole bound lifted %d above the live bytes, %d of them to the optimum, %d only for the short runs that cannot hide",
		iters, lifted, tight, hiding)
	if tight == 0 {
		t.Fatal("the hole bound never reached an optimum the live bound misses")
	}
	if hiding == 0 {
		t.Fatal("the short runs that cannot hide in a hole never made the bound reach the optimum")
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

// roughen drops an inner piece of some items, leaving bytes nobody uses
// (holes a short run may hide in at every time), and lists a few pairs of
// pieces as concurrent.
func roughen(rng *rand.Rand, p *Problem) {
	for i := range p.Items {
		if pcs := p.Items[i].Pieces; len(pcs) >= 3 && rng.IntN(2) == 0 {
			k := 1 + rng.IntN(len(pcs)-2)
			p.Items[i].Pieces = append(pcs[:k:k], pcs[k+1:]...)
		}
	}
	n := len(p.Items)
	for range rng.IntN(3) {
		a, b := rng.IntN(n), rng.IntN(n)
		if a != b {
			p.Concurrent = append(p.Concurrent, PiecePair{
				A: PieceRef{a, rng.IntN(len(p.Items[a].Pieces))},
				B: PieceRef{b, rng.IntN(len(p.Items[b].Pieces))}})
		}
	}
}

// TestHoleBoundLongLivedInputs is the shape of a transformer prefill at its
// peak: per layer a fused projection whose middle third dies (the K and V
// rows moved to the cache) while a large tensor is live, and two small
// inputs live through every layer. The inputs are shorter than the hole,
// but they cannot hide in it: the projection's bytes were all live once,
// while the inputs were. The bound counts them and is the optimum, so
// the greedy placement is proven without a search.
func TestHoleBoundLongLivedInputs(t *testing.T) {
	p := &Problem{}
	for l := range 2 {
		t0 := 1 + 4*l
		p.Items = append(p.Items,
			Item{Name: fmt.Sprint("qkv", l), Size: 9, Pieces: []Piece{
				{Lo: 0, Hi: 3, Start: t0, End: t0 + 3},
				{Lo: 3, Hi: 6, Start: t0, End: t0 + 1},
				{Lo: 6, Hi: 9, Start: t0, End: t0 + 3},
			}},
			Whole(fmt.Sprint("kq", l), 6, t0+1, t0+3))
	}
	p.Items = append(p.Items, Whole("pos", 2, 0, 10), Whole("ids", 1, 0, 10))
	c := mustCompile(p)
	// Span 9 and the 6 bytes of kq; the inputs might hide in the 3-byte hole
	// if only the time of the hole counted.
	if live, old := c.liveBound(), int64(9+6); live > old {
		t.Fatalf("live bound %d above %d", live, old)
	}
	opt := exactOptimum(p)
	lb, err := LowerBound(p)
	if err != nil {
		t.Fatal(err)
	}
	if opt != 9+6+2+1 || lb != opt || slowHoleBound(p) != opt {
		t.Fatalf("optimum %d, lower bound %d, from the definition %d; want %d", opt, lb, slowHoleBound(p), 9+6+2+1)
	}
	sol, err := Solve(p, SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sol.Height != opt || !sol.Proven {
		t.Fatalf("height %d proven %v, want %d proven", sol.Height, sol.Proven, opt)
	}
}
