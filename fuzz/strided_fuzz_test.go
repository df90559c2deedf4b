package fuzz

import (
	"testing"

	"github.com/bits-and-blooms/bitset"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// sfDecoder turns fuzz bytes into small layouts; it yields zeros once the input runs out.
type sfDecoder struct{ data []byte }

func (d *sfDecoder) byte() byte {
	if len(d.data) == 0 {
		return 0
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b
}

// layout decodes a layout of up to 4 dimensions of size <= 6, strides in [-24, 23], element
// size 1..4 and a small offset, placed so that its lowest byte is >= 0. It returns the
// layout and a buffer size that holds it.
func (d *sfDecoder) layout() (strided.Layout, int64) {
	nd := int(d.byte() % 5)
	l := strided.Layout{Shape: make([]int64, nd), Strides: make([]int64, nd), Elem: 1 + int64(d.byte()%4)}
	var neg, pos int64
	empty := false
	for k := range nd {
		l.Shape[k] = int64(d.byte() % 7)
		l.Strides[k] = int64(d.byte()%48) - 24
		if l.Shape[k] == 0 {
			empty = true
		}
	}
	for k, n := range l.Shape {
		if empty || n == 0 {
			break
		}
		if s := l.Strides[k]; s < 0 {
			neg += (n - 1) * s
		} else {
			pos += (n - 1) * s
		}
	}
	l.Offset = -neg + int64(d.byte()%8)
	return l, l.Offset + pos + l.Elem
}

// sfBits is the brute-force oracle: every byte of every element, as a bitmap over [0, size).
func sfBits(l strided.Layout, size int64) *bitset.BitSet {
	b := bitset.New(uint(size))
	testutil.LayoutBytes(l.Offset, l.Shape, l.Strides, l.Elem, func(x int64) { b.Set(uint(x)) })
	return b
}

func sfRunCount(b *bitset.BitSet, size int64) int {
	runs := 0
	for x := int64(0); x < size; x++ {
		if b.Test(uint(x)) && (x == 0 || !b.Test(uint(x-1))) {
			runs++
		}
	}
	return runs
}

func sfSetBits(t *testing.T, s *ranges.Set, size int64) *bitset.BitSet {
	t.Helper()
	b := bitset.New(uint(size))
	for r := range s.All() {
		if r.Lo < 0 || r.Hi > size {
			t.Fatalf("cover run %v outside the buffer [0, %d)", r, size)
		}
		for x := r.Lo; x < r.Hi; x++ {
			b.Set(uint(x))
		}
	}
	return b
}

// FuzzStridedCover checks Cover against the oracle: exact covers equal it; inexact ones are
// supersets of at most budget runs inside the extent, and only when the exact bytes need more
// than budget runs. It also checks that Normalize keeps the byte set and Validate accepts.
func FuzzStridedCover(f *testing.F) {
	f.Add([]byte{2, 3, 4, 4 + 24, 3, 16 + 24, 0, 0})        // 4x3 f32 matrix, transposed strides
	f.Add([]byte{2, 3, 6, 24 + 24, 1, 0, 2, 0})             // a column: 6 rows of 4 bytes, 24 apart
	f.Add([]byte{2, 0, 6, 3 + 24, 6, 5 + 24, 0, 3})         // interleaved strides 3 and 5
	f.Add([]byte{1, 1, 5, 24 - 3, 1, 7})                    // negative stride
	f.Add([]byte{3, 1, 4, 24, 5, 2 + 24, 2, 10 + 24, 0, 3}) // broadcast dimension
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &sfDecoder{data: data}
		l, size := d.layout()
		budget := int(d.byte() % 12) // 0: DefaultBudget
		if err := l.Validate(size); err != nil {
			t.Fatalf("Validate(%v, %d): %v", l, size, err)
		}
		want := sfBits(l, size)
		wantRuns := sfRunCount(want, size)
		set, exact, err := l.Cover(budget)
		if err != nil {
			t.Fatalf("Cover(%v): %v", l, err)
		}
		testutil.Invariants(t, &set)
		got := sfSetBits(t, &set, size)
		eff := budget
		if eff <= 0 {
			eff = strided.DefaultBudget
		}
		if exact {
			if !got.Equal(want) {
				t.Fatalf("Cover(%v, %d) = %v exact, but the oracle differs", l, budget, set.String())
			}
			if set.NumRuns() > eff {
				t.Fatalf("Cover(%v, %d): exact cover of %d runs exceeds the budget", l, budget, set.NumRuns())
			}
		} else {
			if !got.IsSuperSet(want) {
				t.Fatalf("Cover(%v, %d) = %v misses covered bytes", l, budget, set.String())
			}
			if wantRuns <= eff {
				t.Fatalf("Cover(%v, %d) inexact although the exact %d runs fit", l, budget, wantRuns)
			}
			if set.NumRuns() > eff {
				t.Fatalf("Cover(%v, %d): superset of %d runs", l, budget, set.NumRuns())
			}
			ext, _ := l.Extent()
			if b := set.Bounds(); b.Lo < ext.Lo || b.Hi > ext.Hi {
				t.Fatalf("Cover(%v, %d): superset %v outside extent %v", l, budget, b, ext)
			}
		}
		n := l.Normalize()
		if err := n.Validate(size); err != nil {
			t.Fatalf("Normalize(%v) = %v: %v", l, n, err)
		}
		if !sfBits(n, size).Equal(want) {
			t.Fatalf("Normalize(%v) = %v covers other bytes", l, n)
		}
		if l.IsDense() != (wantRuns <= 1) {
			t.Fatalf("IsDense(%v) = %v with %d runs", l, l.IsDense(), wantRuns)
		}
	})
}

// FuzzStridedOverlap checks Overlap against the oracle on two layouts over one buffer:
// Disjoint and Overlapping must be right, and MayOverlap is allowed only when a layout's
// exact bytes need more than budget runs.
func FuzzStridedOverlap(f *testing.F) {
	f.Add([]byte{2, 3, 4, 12 + 24, 2, 4 + 24, 0, 2, 3, 4, 12 + 24, 2, 4 + 24, 2, 0}) // Q/K-like thirds
	f.Add([]byte{1, 0, 6, 2 + 24, 0, 1, 0, 6, 2 + 24, 1, 1})                         // even vs odd bytes
	f.Add([]byte{2, 0, 6, 3 + 24, 6, 5 + 24, 0, 1, 0, 6, 7 + 24, 1, 1})              // interleaved vs strided
	f.Add([]byte{0, 3, 0, 0, 3, 3})                                                  // two scalars
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &sfDecoder{data: data}
		a, sa := d.layout()
		b, sb := d.layout()
		size := max(sa, sb)
		if shift := int64(d.byte() % 16); d.byte()%2 == 0 {
			a.Offset += shift
			size = max(size, sa+shift)
		}
		budget := int(d.byte() % 6)
		eff := budget
		if eff <= 0 {
			eff = strided.DefaultBudget
		}
		ba, bb := sfBits(a, size), sfBits(b, size)
		shared := ba.IntersectionCardinality(bb) > 0
		runsA, runsB := sfRunCount(ba, size), sfRunCount(bb, size)
		for _, p := range [][2]strided.Layout{{a, b}, {b, a}} {
			switch got := strided.Overlap(p[0], p[1], budget); got {
			case strided.Disjoint:
				if shared {
					t.Fatalf("Overlap(%v, %v, %d) = disjoint, but they share bytes", p[0], p[1], budget)
				}
			case strided.Overlapping:
				if !shared {
					t.Fatalf("Overlap(%v, %v, %d) = overlapping, but they share none", p[0], p[1], budget)
				}
			case strided.MayOverlap:
				if runsA <= eff && runsB <= eff {
					t.Fatalf("Overlap(%v, %v, %d) = may-overlap, but both are exact (%d, %d runs)", p[0], p[1], budget, runsA, runsB)
				}
			default:
				t.Fatalf("Overlap = %v", got)
			}
		}
	})
}
