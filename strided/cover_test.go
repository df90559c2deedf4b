package strided

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// checkCover fails unless (set, exact) is a correct answer of Cover(budget) for l.
func checkCover(t *testing.T, l Layout, size int64, budget int, set *ranges.Set, exact bool) {
	t.Helper()
	if err := set.CheckInvariants(); err != nil {
		t.Fatalf("%v budget %d: %v", l, budget, err)
	}
	want := oracleBits(l, size)
	wantRuns := oracleRuns(want, size)
	got, inside := setBits(set, size)
	if !inside {
		t.Fatalf("%v budget %d: cover %v leaves the buffer [0, %d)", l, budget, set.String(), size)
	}
	effective := budget
	if effective <= 0 {
		effective = DefaultBudget
	}
	switch {
	case exact:
		if !got.Equal(want) {
			t.Fatalf("%v budget %d: exact cover %v, oracle %v", l, budget, set.String(), wantRuns)
		}
		if set.NumRuns() > effective {
			t.Fatalf("%v budget %d: exact cover of %d runs exceeds the budget", l, budget, set.NumRuns())
		}
	default:
		if !got.IsSuperSet(want) {
			t.Fatalf("%v budget %d: inexact cover %v misses bytes of %v", l, budget, set.String(), wantRuns)
		}
		if len(wantRuns) <= effective {
			t.Fatalf("%v budget %d: inexact although the %d exact runs fit: %v", l, budget, len(wantRuns), wantRuns)
		}
		if set.NumRuns() > effective {
			t.Fatalf("%v budget %d: superset has %d runs", l, budget, set.NumRuns())
		}
		ext, _ := l.Extent()
		if b := set.Bounds(); b.Lo < ext.Lo || b.Hi > ext.Hi {
			t.Fatalf("%v budget %d: superset %v leaves the extent %v", l, budget, b, ext)
		}
	}
}

func TestCoverAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	inexact := 0
	for range 20000 {
		l, size := randLayout(rng)
		budget := []int{1, 2, 3, 5, 8, 13, 0}[rng.IntN(7)]
		set, exact, err := l.Cover(budget)
		if err != nil {
			t.Fatalf("%v: %v", l, err)
		}
		checkCover(t, l, size, budget, &set, exact)
		if !exact {
			inexact++
		}
		// AppendCover into a set that already holds other bytes = union with them.
		other, _ := randLayoutIn(rng, size)
		dst, _, _ := other.Cover(0)
		before := dst.Clone()
		exact2, err := l.AppendCover(&dst, budget)
		if err != nil || exact2 != exact {
			t.Fatalf("%v: AppendCover exact %v err %v, Cover exact %v", l, exact2, err, exact)
		}
		want := ranges.Union(&before, &set)
		if !dst.Equal(&want) {
			t.Fatalf("%v: AppendCover onto %v = %v, want %v", l, before.String(), dst.String(), want.String())
		}
	}
	if inexact == 0 {
		t.Fatalf("no layout exceeded its budget: the superset path went untested")
	}
}

func TestCoverTable(t *testing.T) {
	col, _ := Dense(0, []int64{4096, 4096}, 4)
	col, _ = col.Select(1, 7) // column 7 of a 4096x4096 f32 matrix
	qkv, _ := Dense(0, []int64{16, 3 * 64}, 4)
	parts, _ := qkv.Split(1, 64, 64, 64)
	cases := []struct {
		name   string
		l      Layout
		budget int
		runs   int
		exact  bool
		first  ranges.Range
		bytes  int64
	}{
		{"scalar", Layout{Offset: 12, Elem: 8}, 0, 1, true, ranges.Range{Lo: 12, Hi: 20}, 8},
		{"empty", Layout{Offset: 12, Shape: []int64{3, 0}, Strides: []int64{4, 4}, Elem: 4}, 0, 0, true, ranges.Range{}, 0},
		{"dense", Bytes(5, 100), 0, 1, true, ranges.Range{Lo: 5, Hi: 105}, 100},
		{"column 4096", col, 0, 4096, true, ranges.Range{Lo: 28, Hi: 32}, 4096 * 4},
		// Over budget: 2048 chunks of 2 rows, each [r·16384+28, r·16384+16384+32).
		{"column 4096, budget 2048", col, 2048, 2048, false, ranges.Range{Lo: 28, Hi: 16384 + 32}, 2048 * (16384 + 4)},
		{"column 4096, budget 1", col, 1, 1, false, ranges.Range{Lo: 28, Hi: 4095*16384 + 32}, 4095*16384 + 4},
		{"K third", parts[1], 0, 16, true, ranges.Range{Lo: 256, Hi: 512}, 16 * 256},
		// Broadcast: 1000 copies of the same 8 bytes.
		{"broadcast", Layout{Offset: 8, Shape: []int64{1000, 2}, Strides: []int64{0, 4}, Elem: 4}, 1, 1, true, ranges.Range{Lo: 8, Hi: 16}, 8},
		// Sliding window: stride 1, elem 4, overlapping elements form one run.
		{"window", Layout{Shape: []int64{10}, Strides: []int64{1}, Elem: 4}, 0, 1, true, ranges.Range{Lo: 0, Hi: 13}, 13},
		// Interleaved: 3a+5b for a,b < 100 covers 0,3,5,6,8,9,10,11,... then everything:
		// 10000 raw runs, 5 exact ones: [0,1) [3,4) [5,7) [8, 793+1).
		{"interleaved", Layout{Shape: []int64{100, 100}, Strides: []int64{3, 5}, Elem: 1}, 8, 7, true, ranges.Range{Lo: 0, Hi: 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, exact, err := c.l.Cover(c.budget)
			if err != nil {
				t.Fatal(err)
			}
			if s.NumRuns() != c.runs || exact != c.exact {
				t.Fatalf("%d runs exact %v, want %d runs exact %v: %v", s.NumRuns(), exact, c.runs, c.exact, s.String())
			}
			if c.runs > 0 && s.Runs()[0] != c.first {
				t.Errorf("first run %v, want %v", s.Runs()[0], c.first)
			}
			if c.bytes > 0 && s.Len() != c.bytes {
				t.Errorf("%d bytes, want %d", s.Len(), c.bytes)
			}
		})
	}
}

func TestCoverInterleavedLarge(t *testing.T) {
	// 3a + 5b, a < 100, b < 100: brute-force check against the oracle.
	l := Layout{Shape: []int64{100, 100}, Strides: []int64{3, 5}, Elem: 1}
	size := int64(3*99 + 5*99 + 1)
	s, exact, err := l.Cover(8)
	if err != nil || !exact {
		t.Fatalf("exact %v err %v", exact, err)
	}
	checkCover(t, l, size, 8, &s, exact)
}

func TestAppendCoverZeroAlloc(t *testing.T) {
	col, _ := Dense(0, []int64{4096, 4096}, 4)
	col, _ = col.Select(1, 0)
	var dst ranges.Set
	if _, err := col.AppendCover(&dst, 0); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(20, func() {
		dst.Reset()
		_, _ = col.AppendCover(&dst, 0)
	})
	if n != 0 {
		t.Errorf("AppendCover into a reused set: %v allocs, want 0", n)
	}
}

func TestCoverErrorsLeaveDst(t *testing.T) {
	dst := ranges.FromRanges(ranges.Range{Lo: 0, Hi: 4})
	for _, l := range []Layout{
		{Shape: []int64{2}, Strides: nil, Elem: 4},
		{Shape: []int64{2}, Strides: []int64{4}, Elem: 0},
		{Shape: []int64{-1}, Strides: []int64{4}, Elem: 4},
		{Shape: []int64{1 << 62, 4}, Strides: []int64{1, 1}, Elem: 4},
	} {
		if _, err := l.AppendCover(&dst, 0); err == nil {
			t.Errorf("%v: no error", l)
		}
		if !slices.Equal(dst.Runs(), []ranges.Range{{Lo: 0, Hi: 4}}) {
			t.Fatalf("%v: dst changed to %v", l, dst.String())
		}
	}
}

// TestContiguousShortcut: AppendCover's one-dimensional shortcut answers
// exactly as the general path on random one-dimensional layouts, valid or
// not, into empty and non-empty sets.
func TestContiguousShortcut(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	pick := func() int64 {
		return []int64{0, 1, 2, 3, 4, 7, 8, -1, -4, 1 << 40, math.MaxInt64, math.MinInt64}[rng.IntN(12)]
	}
	shortcut := 0
	for range 20000 {
		l := Layout{Offset: pick() * int64(rng.IntN(3)), Shape: []int64{pick()}, Strides: []int64{pick()}, Elem: pick()}
		if rng.IntN(2) == 0 {
			l.Strides[0] = l.Elem
		}
		var pre ranges.Set
		if rng.IntN(2) == 0 {
			pre.Add(ranges.Range{Lo: 5, Hi: 9})
		}
		got, want := pre.Clone(), pre.Clone()
		gotExact, gotErr := l.AppendCover(&got, 64)
		wantExact, wantErr := l.appendCover(&want, 64)
		if gotExact != wantExact || (gotErr == nil) != (wantErr == nil) || !got.Equal(&want) {
			t.Fatalf("%v: shortcut (%v, %v, %v), general (%v, %v, %v)", l, got.Runs(), gotExact, gotErr, want.Runs(), wantExact, wantErr)
		}
		if _, ok := l.contiguousRun(); ok {
			shortcut++
		}
	}
	if shortcut == 0 {
		t.Fatal("no layout took the shortcut")
	}
}
