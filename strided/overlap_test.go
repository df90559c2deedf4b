package strided

import (
	"math/rand/v2"
	"testing"
)

func TestNormalizeAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		l, size := randLayout(rng)
		orig := l.Clone()
		n := l.Normalize()
		if !l.Equal(orig) {
			t.Fatalf("Normalize modified its receiver: %v", l)
		}
		if err := n.Validate(size); err != nil {
			t.Fatalf("Normalize(%v) = %v: %v", l, n, err)
		}
		if !oracleBits(n, size).Equal(oracleBits(l, size)) {
			t.Fatalf("Normalize(%v) = %v covers other bytes", l, n)
		}
		if e, _ := l.NumElems(); e == 0 {
			continue
		}
		for k, s := range n.Strides {
			if s <= 0 || n.Shape[k] < 2 || (k > 0 && s >= n.Strides[k-1]) {
				t.Fatalf("Normalize(%v) = %v: dimension %d not canonical", l, n, k)
			}
		}
		if k := len(n.Strides) - 1; k >= 0 && n.Strides[k] <= n.Elem {
			t.Fatalf("Normalize(%v) = %v: innermost dimension not folded", l, n)
		}
		if nn := n.Normalize(); !nn.Equal(n) {
			t.Fatalf("Normalize not idempotent: %v -> %v -> %v", l, n, nn)
		}
		runs := oracleRuns(oracleBits(l, size), size)
		if dense := l.IsDense(); dense != (len(runs) == 1) {
			t.Fatalf("IsDense(%v) = %v, oracle runs %v", l, dense, runs)
		}
	}
}

func TestNormalizeTable(t *testing.T) {
	d23, _ := Dense(0, []int64{2, 3}, 4)
	tr, _ := d23.Transpose(0, 1)
	rev, _ := Dense(0, []int64{8}, 2)
	rev, _ = rev.Slice(0, 7, -1, -1)
	cases := []struct {
		name string
		l    Layout
		want Layout
	}{
		// A transposed dense matrix still covers one run.
		{"transpose", tr, Layout{Offset: 0, Shape: []int64{}, Strides: []int64{}, Elem: 24}},
		// Reversed: offset moves to the lowest byte, stride flips.
		{"reversed", rev, Layout{Offset: 0, Shape: []int64{}, Strides: []int64{}, Elem: 16}},
		// Column of a 4x4 f32 matrix: rows 16 bytes apart, 4 bytes each.
		{"column", Layout{Offset: 8, Shape: []int64{4, 1}, Strides: []int64{16, 4}, Elem: 4},
			Layout{Offset: 8, Shape: []int64{4}, Strides: []int64{16}, Elem: 4}},
		// [2 3] with strides [6 2], elem 1: 0 2 4 6 8 10: one progression of 6.
		{"merge", Layout{Shape: []int64{2, 3}, Strides: []int64{6, 2}, Elem: 1},
			Layout{Shape: []int64{6}, Strides: []int64{2}, Elem: 1}},
		{"broadcast", Layout{Offset: 4, Shape: []int64{5, 3}, Strides: []int64{0, 8}, Elem: 2},
			Layout{Offset: 4, Shape: []int64{3}, Strides: []int64{8}, Elem: 2}},
		{"empty", Layout{Offset: 4, Shape: []int64{5, 0}, Strides: []int64{0, 8}, Elem: 2},
			Layout{Offset: 4, Shape: []int64{0}, Strides: []int64{0}, Elem: 2}},
		{"malformed", Layout{Shape: []int64{2}, Elem: 2}, Layout{Shape: []int64{2}, Elem: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.l.Normalize(); !got.Equal(c.want) {
				t.Errorf("Normalize(%v) = %v, want %v", c.l, got, c.want)
			}
		})
	}
}

// oracleOverlap says whether a and b share a byte, and how many runs each covers.
func oracleOverlap(a, b Layout, size int64) (shared bool, runsA, runsB int) {
	ba, bb := oracleBits(a, size), oracleBits(b, size)
	return ba.IntersectionCardinality(bb) > 0, len(oracleRuns(ba, size)), len(oracleRuns(bb, size))
}

func TestOverlapAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	counts := map[OverlapResult]int{}
	for range 30000 {
		size := int64(8 + rng.IntN(120))
		a, ok1 := randLayoutIn(rng, size)
		b, ok2 := randLayoutIn(rng, size)
		if !ok1 || !ok2 {
			continue
		}
		if rng.IntN(4) == 0 { // same lattice, shifted: the interleaved fast path
			b = a.Clone()
			ext, _ := a.Extent()
			if ext.Hi < size {
				b.Offset += rng.Int64N(size - ext.Hi + 1)
			}
		}
		budget := []int{1, 2, 4, 16, 0}[rng.IntN(5)]
		eff := budget
		if eff <= 0 {
			eff = DefaultBudget
		}
		shared, ra, rb := oracleOverlap(a, b, size)
		for _, pair := range [2][2]Layout{{a, b}, {b, a}} {
			got := Overlap(pair[0], pair[1], budget)
			counts[got]++
			switch got {
			case Disjoint:
				if shared {
					t.Fatalf("Overlap(%v, %v, %d) = disjoint, but they share bytes", pair[0], pair[1], budget)
				}
			case Overlapping:
				if !shared {
					t.Fatalf("Overlap(%v, %v, %d) = overlapping, but they share nothing", pair[0], pair[1], budget)
				}
			case MayOverlap:
				if ra <= eff && rb <= eff {
					t.Fatalf("Overlap(%v, %v, %d) = may-overlap within budget (%d, %d runs)", pair[0], pair[1], budget, ra, rb)
				}
			default:
				t.Fatalf("Overlap returned %v", got)
			}
		}
	}
	if counts[Disjoint] == 0 || counts[Overlapping] == 0 {
		t.Fatalf("degenerate test: %v", counts)
	}
	t.Logf("results: %v", counts)
}

func TestOverlapTable(t *testing.T) {
	const T, H = 64, 128
	qkv, _ := Dense(0, []int64{T, 3 * H}, 4)
	p, _ := qkv.Split(1, H, H, H)
	q, k, v := p[0], p[1], p[2]
	kt, _ := k.Transpose(0, 1)
	row5, _ := qkv.Select(0, 5)
	kRow5, _ := k.Select(0, 5)
	kHead, _ := k.Slice(1, 0, 64, 1) // first half of every K row
	vec, _ := Dense(0, []int64{1024}, 4)
	even, _ := vec.Slice(0, 0, 1024, 2)
	odd, _ := vec.Slice(0, 1, 1024, 2)
	every4, _ := vec.Slice(0, 0, 1024, 4)
	gu, _ := Dense(0, []int64{T, 2 * 256}, 2)
	halves, _ := gu.Split(1, 256, 256)
	cases := []struct {
		name string
		a, b Layout
		want OverlapResult
	}{
		{"Q vs K", q, k, Disjoint},
		{"K vs V", k, v, Disjoint},
		{"Q vs V", q, v, Disjoint},
		{"K vs K^T", k, kt, Overlapping},
		{"Q vs K^T", q, kt, Disjoint},
		{"row 5 vs K", row5, k, Overlapping},
		{"K row 5 vs Q", kRow5, q, Disjoint},
		{"K head vs K", kHead, k, Overlapping},
		{"even vs odd", even, odd, Disjoint},
		{"even vs every 4th", even, every4, Overlapping},
		{"odd vs every 4th", odd, every4, Disjoint},
		{"gate vs up", halves[0], halves[1], Disjoint},
		{"empty", Layout{Shape: []int64{0}, Strides: []int64{4}, Elem: 4}, q, Disjoint},
		{"malformed", Layout{Shape: []int64{2}, Elem: 4}, q, MayOverlap},
	}
	size := int64(T * 3 * H * 4)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Overlap(c.a, c.b, 0); got != c.want {
				t.Errorf("Overlap = %v, want %v", got, c.want)
			}
			if c.want == MayOverlap || c.name == "gate vs up" {
				return
			}
			if shared, _, _ := oracleOverlap(c.a, c.b, size); shared != (c.want == Overlapping) {
				t.Errorf("table disagrees with the oracle")
			}
		})
	}
}

func TestOverlapBeyondBudget(t *testing.T) {
	// Two columns of a big matrix: 1<<20 rows each, far beyond any budget; the lattice
	// path still answers exactly.
	m, _ := Dense(0, []int64{1 << 20, 1 << 10}, 4)
	c0, _ := m.Select(1, 0)
	c1, _ := m.Select(1, 1)
	if got := Overlap(c0, c1, 16); got != Disjoint {
		t.Errorf("column 0 vs 1: %v", got)
	}
	if got := Overlap(c0, c0, 16); got != Overlapping {
		t.Errorf("column 0 vs itself: %v", got)
	}
	// A layout the lattice recursion cannot settle within budget: 3a+5b against a column.
	a := Layout{Shape: []int64{1 << 12, 1 << 12}, Strides: []int64{3, 5}, Elem: 1}
	b := Layout{Offset: 1, Shape: []int64{1 << 12}, Strides: []int64{7}, Elem: 1}
	if got := Overlap(a, b, 1); got == Disjoint {
		t.Errorf("interleaved vs column: %v, they share bytes", got)
	}
}

func TestOverlapZeroAlloc(t *testing.T) {
	qkv, _ := Dense(0, []int64{4096, 3 * 4096}, 4)
	p, _ := qkv.Split(1, 4096, 4096, 4096)
	if n := testing.AllocsPerRun(50, func() { _ = Overlap(p[0], p[1], 0) }); n != 0 {
		t.Errorf("Overlap(Q, K): %v allocs, want 0", n)
	}
}

func TestOverlapResultString(t *testing.T) {
	for r, want := range map[OverlapResult]string{Disjoint: "disjoint", Overlapping: "overlapping", MayOverlap: "may-overlap", 7: "OverlapResult(7)"} {
		if r.String() != want {
			t.Errorf("%d.String() = %q", r, r.String())
		}
	}
}
