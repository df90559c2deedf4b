package replay

import (
	"fmt"
	"math/rand/v2"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// refCountWaited counts hand-overs of pending bytes as Replay did while it ran: at each
// allocation, every earlier placed buffer overlapping it, every use of it by a submitted
// op ending after the host's time, its footprint against the bytes taken.
func refCountWaited(r *replayer) int {
	p := r.p
	submitted := make([]bool, len(p.Ops))
	placed := make([]bool, len(p.Buffers))
	waited := 0
	for _, ev := range r.log {
		if ev.buf < 0 {
			submitted[ev.op] = true
			continue
		}
		b := ev.buf
		if ev.count {
			got := r.bufs[b].Range()
			hit := false
			for j, other := range r.bufs {
				if j == b || !placed[j] || !other.Range().Overlaps(got) {
					continue
				}
				for _, ou := range r.usesOf[j] {
					if !submitted[ou.Op] || r.end[ou.Op] <= ev.host {
						continue
					}
					fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
					shifted, _ := translated(&fp, other.Offset())
					if _, h := shifted.Overlaps(got); h {
						hit = true
					}
				}
			}
			if hit {
				waited++
			}
		}
		placed[b] = true
	}
	return waited
}

// refUseSpans is the span of each piece's users as result computed it: every use
// against every piece.
func refUseSpans(r *replayer, b int, pieces []trace.Piece) []useSpan {
	p := r.p
	out := make([]useSpan, len(pieces))
	for i, pc := range pieces {
		out[i] = useSpan{-1, -1}
		for _, ou := range r.usesOf[b] {
			fp, _ := p.Footprint(p.Ops[ou.Op].Uses[ou.Use].Ref)
			if _, hit := fp.OverlapsSet(&pc.Bytes); !hit {
				continue
			}
			if out[i].first < 0 || r.start[ou.Op] < out[i].first {
				out[i].first = r.start[ou.Op]
			}
			out[i].last = max(out[i].last, r.end[ou.Op])
		}
	}
	return out
}

// TestReplayCountsMatchReference: the hand-over count and the pieces' use spans agree
// with the scans they replace, on random traces under every policy and on the generated
// shapes.
func TestReplayCountsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	compare := func(what string, p *trace.Program) {
		t.Helper()
		for _, pol := range subarena.Policies() {
			for _, noDonate := range []bool{false, true} {
				r, err := runReplay(p, Options{Policy: pol, NoDonate: noDonate})
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if got, want := r.countWaited(), refCountWaited(r); got != want {
					t.Fatalf("%s %v: waited %d, reference %d\n%s", what, pol, got, want, trace.Marshal(p.Trace))
				}
				for b := range p.Buffers {
					if p.Buffers[b].External {
						continue
					}
					pieces := p.LetGo(b, 0)
					got, want := r.useSpans(b, pieces), refUseSpans(r, b, pieces)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s %v: buffer %d piece %d: span %v, reference %v", what, pol, b, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	n := testutil.Count(200, 30)
	waited := 0
	for i := 0; i < n; i++ {
		p := tracetest.Resolve(t, tracetest.RandomTrace(rng, 10+rng.IntN(100)))
		compare(fmt.Sprintf("trace %d", i), p)
		res, err := Run(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		waited += res.Waited
	}
	if waited == 0 {
		t.Fatal("no replay handed pending bytes over")
	}
	for _, sh := range tracetest.Shapes {
		p := tracetest.ShapeProgram(t, sh, 300)
		compare(sh.Name, p)
	}
}
