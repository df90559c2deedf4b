package strided

import (
	"testing"

	"github.com/subarena/subarena/ranges"
)

// column4096 is column 7 of a 4096x4096 f32 matrix: 4096 runs of 4 bytes, 16384 apart.
func column4096(tb testing.TB) Layout {
	m, err := Dense(0, []int64{4096, 4096}, 4)
	if err != nil {
		tb.Fatal(err)
	}
	col, err := m.Select(1, 7)
	if err != nil {
		tb.Fatal(err)
	}
	return col
}

func BenchmarkCoverColumn4096(b *testing.B) {
	col := column4096(b)
	var dst ranges.Set
	exact, err := col.AppendCover(&dst, 0)
	if err != nil || !exact || dst.NumRuns() != 4096 || dst.Len() != 4096*4 {
		b.Fatalf("cover: exact %v err %v runs %d", exact, err, dst.NumRuns())
	}
	b.Run("append-reuse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst.Reset()
			_, _ = col.AppendCover(&dst, 0)
		}
	})
	b.Run("cover-new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _, _ = col.Cover(0)
		}
	})
	// Baseline: enumerate every element and add its bytes, as a naive cover would.
	b.Run("baseline-per-element", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst.Reset()
			for i := int64(0); i < col.Shape[0]; i++ {
				a := col.Offset + i*col.Strides[0]
				dst.Add(ranges.Range{Lo: a, Hi: a + col.Elem})
			}
		}
	})
}

// qkvThirds returns the Q and K views of a fused projection output [T, 3H] f32, T = H = 4096.
func qkvThirds(tb testing.TB) (q, k Layout) {
	const T, H = 4096, 4096
	qkv, err := Dense(0, []int64{T, 3 * H}, 4)
	if err != nil {
		tb.Fatal(err)
	}
	parts, err := qkv.Split(1, H, H, H)
	if err != nil {
		tb.Fatal(err)
	}
	return parts[0], parts[1]
}

func BenchmarkOverlapQKV(b *testing.B) {
	q, k := qkvThirds(b)
	if got := Overlap(q, k, 0); got != Disjoint {
		b.Fatalf("Overlap(Q, K) = %v", got)
	}
	b.Run("lattice", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Overlap(q, k, 0)
		}
	})
	// Baseline: compare the two exact covers (4096 runs each), reusing the sets.
	b.Run("baseline-covers", func(b *testing.B) {
		b.ReportAllocs()
		var sq, sk ranges.Set
		for b.Loop() {
			sq.Reset()
			sk.Reset()
			_, _ = q.AppendCover(&sq, 0)
			_, _ = k.AppendCover(&sk, 0)
			if _, hit := sq.OverlapsSet(&sk); hit {
				b.Fatal("overlap")
			}
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	q, _ := qkvThirds(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Normalize()
	}
}
