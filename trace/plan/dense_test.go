package plan

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestOrderedFromCoversConcurrent: on random multi-engine traces, every pair of pieces
// the slow reference (concurrentPairs, pair by pair) lists as concurrent, and every pair
// whose windows intersect, has intersecting stretched windows (orderedFrom), so that the
// dense sweep keeps them apart; and the dense sweep's plan, forced on each trace, is one
// the checker accepts.
func TestOrderedFromCoversConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 30))
	multi := 0
	for i := range testutil.Count(400, 80) {
		tr, err := trace.Parse(tracetest.Random(rng, 10+rng.IntN(80)))
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Engines) < 2 {
			continue
		}
		multi++
		p, err := tr.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		hb, order, err := relation(p)
		if err != nil {
			t.Fatal(err)
		}
		ip := newInplacer(p, hb, true)
		ip.order = order
		ip.decide()
		dv := newDeriver(ip)
		at := dv.at
		dv.addItems(func(sg *segment, start, stop int) (int, int) { return at[start], at[stop] }, nil)
		d := dv.d
		nEng := dv.nEng
		for k := range dv.infos {
			o := dv.infoOn[2*nEng*k : 2*nEng*(k+1)]
			dv.infos[k].firstOn, dv.infos[k].lastOn = o[:nEng:nEng], o[nEng:]
		}
		for it := range d.prob.Items {
			lo, hi := dv.pieceAt[it], dv.pieceAt[it+1]
			d.prob.Items[it].Pieces = dv.pieces[lo:hi:hi]
		}
		ends := orderedFrom(d.prob, dv.infos, order)
		index := map[PieceRef]int{}
		for k, in := range dv.infos {
			index[PieceRef{in.item, in.piece}] = k
		}
		stretched := func(k int) (Time, Time) {
			return d.prob.Items[dv.infos[k].item].Pieces[dv.infos[k].piece].Start, ends[k]
		}
		for _, pp := range concurrentPairs(d.prob, dv.infos, hb) {
			a, b := index[pp.A], index[pp.B]
			sa, ea := stretched(a)
			sb, eb := stretched(b)
			if !(sa < eb && sb < ea) {
				t.Fatalf("trace %d: concurrent pieces %v [%d, %d) and %v [%d, %d) are apart when stretched",
					i, pp.A, sa, ea, pp.B, sb, eb)
			}
		}
		// The dense sweep's plan, forced, is safe.
		saved := densePairLimit
		densePairLimit = func(int) int64 { return -1 }
		res, err := Plan(tr, Options{Check: true})
		densePairLimit = saved
		if err != nil {
			t.Fatalf("trace %d: dense plan: %v", i, err)
		}
		if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
			t.Fatalf("trace %d: dense plan unsafe: %v %v", i, err, rep)
		}
	}
	if multi < 10 {
		t.Fatalf("only %d multi-engine traces", multi)
	}
}

// TestPlanMemoryLinearOnTwoEngines: planning the copy-engine trace (tracetest.CopyEngine)
// allocates memory
// linear in its size: 4x the iterations allocate less than 6x the bytes (it was 16x, a
// conflict pair listed per pair of buffers: 3.5 GB at 2,000 steps), and the plan is no
// higher than the online replay's, which is as low as a plan gets there.
func TestPlanMemoryLinearOnTwoEngines(t *testing.T) {
	allocated := func(iters int) (uint64, Result) {
		tr, err := trace.Parse(tracetest.CopyEngine(iters, 0))
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		res, err := Plan(tr, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, res
	}
	small, _ := allocated(500)
	large, res := allocated(2000)
	t.Logf("500 iterations: %d B allocated, 2000: %d B (%.1fx); plan %d B by %s", small, large,
		float64(large)/float64(small), res.Plan.Size, res.Method)
	if large > 6*small {
		t.Fatalf("4x the iterations allocated %.1fx the memory", float64(large)/float64(small))
	}
	tr, _ := trace.Parse(tracetest.CopyEngine(2000, 0))
	p, _ := tr.Resolve()
	want := int64(0)
	for i := range 2000 {
		want += alignUp(int64(1024+256*(i%7))/2, 256) // the halves the copy engine read never come back
	}
	if res.Plan.Size > want+4096 {
		t.Fatalf("plan %d B, the copied halves alone are %d B", res.Plan.Size, want)
	}
	if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("unsafe: %v", err)
	}
}
