package trace

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
)

// sameReport fails t unless Check and referenceCheck (the pairwise checker) give
// identical reports for plan, violation by violation and in the same order.
func sameReport(t *testing.T, what string, p *Program, plan *Plan) *Report {
	t.Helper()
	got, err := Check(p, plan)
	want, werr := referenceCheck(p, plan)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, reference %v", what, err, werr)
	}
	if err != nil {
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: report differs from the pairwise checker's\ngot  %s\nwant %s\n%s", what,
			describeReport(got), describeReport(want), Marshal(p.Trace))
	}
	return got
}

func describeReport(r *Report) string {
	s := fmt.Sprintf("safe %v pairs %d, %d violations:", r.Safe, r.Pairs, len(r.Violations))
	for i := range r.Violations {
		v := &r.Violations[i]
		s += fmt.Sprintf("\n  %s %v %d B %s.%d/%v -> %s/%v", v.Rule, v.Ranges, v.Bytes, v.Earlier.Buffer, 0,
			v.Earlier.Chain, v.Later.Buffer, v.Later.Chain) + " " + v.MissingEdge()
	}
	return s
}

// denseOffsets places every alloc buffer at a random offset below spread.
func denseOffsets(rng *rand.Rand, p *Program, spread int64) *Plan {
	plan := &Plan{Trace: p.Trace.Name, Offsets: map[string]int64{}}
	for _, b := range p.Buffers {
		if !b.External {
			off := rng.Int64N(spread)
			plan.Offsets[b.Name] = off
			plan.Size = max(plan.Size, off+b.Size)
		}
	}
	return plan
}

// TestCheckSweepMatchesPairwise: on random traces, with random offsets, random
// placements and every policy's replay plan, Check reports exactly what the pairwise
// checker reports.
func TestCheckSweepMatchesPairwise(t *testing.T) {
	n := 400
	if testing.Short() || raceEnabled {
		n = 60
	}
	rng := rand.New(rand.NewPCG(11, 12))
	rules := map[string]int{}
	plans := 0
	for i := 0; i < n; i++ {
		tr := randomTrace(rng, 10+rng.IntN(120))
		p, err := tr.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 4; j++ {
			var plan *Plan
			switch j {
			case 0:
				plan = denseOffsets(rng, p, 16)
			case 1:
				plan = denseOffsets(rng, p, 64)
			default:
				plan = randomPlacements(rng, p)
			}
			rep := sameReport(t, fmt.Sprintf("trace %d plan %d", i, j), p, plan)
			if rep != nil {
				plans++
				for _, v := range rep.Violations {
					rules[v.Rule]++
				}
			}
		}
		for _, pol := range subarena.Policies() {
			res, err := Replay(p, ReplayOptions{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			sameReport(t, fmt.Sprintf("trace %d %v", i, pol), p, res.Plan)
		}
	}
	for _, r := range []string{ViolationUnordered, ViolationSameOp, ViolationHeld, ViolationTakenOver} {
		if rules[r] == 0 {
			t.Fatalf("no %q violation among %d plans: %v", r, plans, rules)
		}
	}
	t.Logf("%d plans; violations by rule: %v", plans, rules)
}

// TestCheckSweepMatchesPairwiseScaleShapes compares the two checkers on the generated
// large shapes at small sizes, under every policy and with buffers piled on few offsets.
func TestCheckSweepMatchesPairwiseScaleShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range scaleShapes {
		for _, n := range []int{40, 300} {
			tr, err := Parse(sh.gen(n))
			if err != nil {
				t.Fatal(err)
			}
			p, err := tr.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range subarena.Policies() {
				res, err := Replay(p, ReplayOptions{Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				sameReport(t, fmt.Sprintf("%s %d %v", sh.name, n, pol), p, res.Plan)
			}
			sameReport(t, fmt.Sprintf("%s %d piled", sh.name, n), p, denseOffsets(rng, p, 2048))
		}
	}
}

// TestPaint: paint gives what taking each set's bytes not taken before gives.
func TestPaint(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for i := 0; i < 2000; i++ {
		lo := rng.Int64N(10)
		hi := lo + rng.Int64N(60)
		sets := make([]ranges.Set, rng.IntN(12))
		for j := range sets {
			for k := rng.IntN(5); k > 0; k-- {
				a := rng.Int64N(80) - 5
				sets[j].Add(ranges.Range{Lo: a, Hi: a + 1 + rng.Int64N(12)})
			}
		}
		taken, rest := paint(lo, hi, sets)
		left := ranges.FromRanges(ranges.Range{Lo: lo, Hi: hi})
		for j := range sets {
			want := ranges.Intersect(&left, &sets[j])
			left.RemoveSet(&want)
			if !taken[j].Equal(&want) {
				t.Fatalf("case %d: set %d takes %v, want %v", i, j, taken[j].String(), want.String())
			}
		}
		if !rest.Equal(&left) {
			t.Fatalf("case %d: rest %v, want %v", i, rest.String(), left.String())
		}
	}
}
