package trace

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

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
