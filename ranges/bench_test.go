package ranges

import (
	"fmt"
	"testing"
)

// benchSets returns two sets of n runs each that interleave: a has runs at [8i, 8i+4),
// b at [8i+2, 8i+6) for half the indices and [8i+5, 8i+7) for the rest, so unions merge,
// subtractions split, and both sets span the same bytes.
func benchSets(n int) (a, b Set) {
	a.runs = make([]Range, 0, n)
	b.runs = make([]Range, 0, n)
	for i := range int64(n) {
		a.Add(Range{8 * i, 8*i + 4})
		if i%2 == 0 {
			b.Add(Range{8*i + 2, 8*i + 6})
		} else {
			b.Add(Range{8*i + 5, 8*i + 7})
		}
	}
	return a, b
}

var benchSizes = []int{100, 1000, 10000, 100000}

// benchSetOp times a set operation at every size of benchSizes: fresh
// returns x op y as a new set, inPlace applies op y to s, a copy of x. The
// answer is checked once (valid, wantRuns(n) runs) before timing.
func benchSetOp(b *testing.B, name string, n int, x, y *Set, wantRuns int, fresh func(x, y *Set) Set, inPlace func(s, y *Set)) {
	b.Helper()
	if got := fresh(x, y); got.CheckInvariants() != nil || got.NumRuns() != wantRuns {
		b.Fatalf("%s: %v, %d runs, want %d", name, got.CheckInvariants(), got.NumRuns(), wantRuns)
	}
	b.Run(fmt.Sprintf("runs=%d/new", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fresh(x, y)
		}
	})
	benchOnCopy(b, fmt.Sprintf("runs=%d/inplace", n), x, func(s *Set) { inPlace(s, y) })
}

// benchOnCopy times op applied to s, a copy of x refilled before each
// iteration in a slice with room for twice x's runs.
func benchOnCopy(b *testing.B, name string, x *Set, op func(s *Set)) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		var s Set
		s.runs = make([]Range, 0, 2*x.NumRuns())
		for b.Loop() {
			s.Reset()
			s.runs = append(s.runs, x.runs...)
			op(&s)
		}
	})
}

func BenchmarkUnion(b *testing.B) {
	for _, n := range benchSizes {
		x, y := benchSets(n)
		benchSetOp(b, "union", n, &x, &y, n+n/2, Union, (*Set).AddSet)
		// Baseline: the same union by one Add per run of y (quadratic: half of them insert
		// in the middle), so only for the small sizes.
		if n > 1000 {
			continue
		}
		benchOnCopy(b, fmt.Sprintf("runs=%d/add-each", n), &x, func(s *Set) {
			for _, r := range y.runs {
				s.Add(r)
			}
		})
	}
}

func BenchmarkSubtract(b *testing.B) {
	for _, n := range benchSizes {
		x, y := benchSets(n)
		benchSetOp(b, "subtract", n, &x, &y, n, Subtract, (*Set).RemoveSet)
	}
}

func BenchmarkAddAppend(b *testing.B) {
	b.ReportAllocs()
	var s Set
	s.runs = make([]Range, 0, 4096)
	for b.Loop() {
		s.Reset()
		for i := range int64(4096) {
			s.Add(Range{i * 16384, i*16384 + 4})
		}
	}
}

func BenchmarkContains(b *testing.B) {
	x, _ := benchSets(100000)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		_ = x.Contains(i)
		i = (i + 7919) % 800000
	}
}
