package trace

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/subarena/subarena/ranges"
)

// TestLetGo: on random traces, every buffer's pieces cover its bytes exactly once, each
// byte going at the first discard covering it or else at the release (Never when held),
// and LetGoGroup of the buffer alone gives LetGo's pieces.
func TestLetGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	pieces := 0
	for i := 0; i < 200; i++ {
		p := mustResolve(t, randomTrace(rng, 10+rng.IntN(100)))
		footprint := func(r Ref) ranges.Set { fp, _ := p.Footprint(r); return fp }
		for b := range p.Buffers {
			off := rng.Int64N(100)
			got := p.LetGo(b, off)
			if alone := p.LetGoGroup([]int{b}, off, footprint); !reflect.DeepEqual(got, alone) {
				t.Fatalf("trace %d buffer %d: LetGo %v, LetGoGroup %v", i, b, got, alone)
			}
			buf := &p.Buffers[b]
			for x := int64(0); x < buf.Size; x++ {
				want := Never
				if buf.Release >= 0 {
					want = buf.Release
				}
				for _, v := range buf.Discards {
					if fp, _ := p.Footprint(Ref{Buffer: b, View: v}); fp.Contains(x) {
						want = min(want, p.Views[v].Discard)
					}
				}
				n := 0
				for _, pc := range got {
					if pc.Bytes.Contains(x + off) {
						n++
						if pc.Step != want {
							t.Fatalf("trace %d buffer %d byte %d: let go at %d, want %d", i, b, x, pc.Step, want)
						}
					}
				}
				if n != 1 {
					t.Fatalf("trace %d buffer %d byte %d: in %d pieces", i, b, x, n)
				}
			}
			pieces += len(got)
		}
	}
	if pieces == 0 {
		t.Fatal("no pieces")
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
