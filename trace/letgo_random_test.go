package trace_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestLetGo: on random traces, every buffer's pieces cover its bytes exactly once, each
// byte going at the first discard covering it or else at the release (trace.Never when held),
// and LetGoGroup of the buffer alone gives LetGo's pieces.
func TestLetGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	pieces := 0
	for i := 0; i < 200; i++ {
		p := tracetest.Resolve(t, tracetest.RandomTrace(rng, 10+rng.IntN(100)))
		footprint := func(r trace.Ref) ranges.Set { fp, _ := p.Footprint(r); return fp }
		for b := range p.Buffers {
			off := rng.Int64N(100)
			got := p.LetGo(b, off)
			if alone := p.LetGoGroup([]int{b}, off, footprint); !reflect.DeepEqual(got, alone) {
				t.Fatalf("trace %d buffer %d: LetGo %v, LetGoGroup %v", i, b, got, alone)
			}
			buf := &p.Buffers[b]
			for x := int64(0); x < buf.Size; x++ {
				want := trace.Never
				if buf.Release >= 0 {
					want = buf.Release
				}
				for _, v := range buf.Discards {
					if fp, _ := p.Footprint(trace.Ref{Buffer: b, View: v}); fp.Contains(x) {
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
