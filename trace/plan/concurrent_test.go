package plan

import (
	"slices"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestConcurrentPairsByClock: on random multi-engine traces and random pieces (windows,
// first and last ops per engine), the clock sweep lists exactly the pairs, in the same
// order, that the pairwise loop lists.
func TestConcurrentPairsByClock(t *testing.T) {
	rng, traces := randomTraces(51, 52, 600, evenStrided)
	found := 0
	for iter, tr := range traces {
		if len(tr.Engines) == 1 {
			tr.Engines = append(tr.Engines, "extra")
		}
		p := tracetest.Resolve(t, tr)
		order, err := trace.NewOrder(p)
		if err != nil {
			t.Fatal(err)
		}
		nEng, nOps := len(tr.Engines), len(p.Ops)
		if nOps == 0 {
			continue
		}
		onEngine := make([][]int, nEng)
		for k := range p.Ops {
			onEngine[p.Ops[k].Engine] = append(onEngine[p.Ops[k].Engine], k)
		}
		prob := &Problem{}
		var infos []pieceInfo
		for it := range 1 + rng.IntN(6) {
			item := Item{Name: string(rune('a' + it)), Size: 8}
			for pc := range 1 + rng.IntN(4) {
				s := rng.IntN(8)
				item.Pieces = append(item.Pieces, Piece{Lo: 0, Hi: 8, Start: s, End: s + 1 + rng.IntN(4)})
				info := pieceInfo{item: it, piece: pc, firstOn: make([]int, nEng), lastOn: make([]int, nEng)}
				for e := range nEng {
					info.firstOn[e], info.lastOn[e] = -1, -1
					if len(onEngine[e]) > 0 && rng.IntN(3) > 0 {
						info.firstOn[e] = onEngine[e][rng.IntN(len(onEngine[e]))]
					}
					if len(onEngine[e]) > 0 && rng.IntN(3) > 0 {
						info.lastOn[e] = onEngine[e][rng.IntN(len(onEngine[e]))]
					}
				}
				infos = append(infos, info)
			}
			prob.Items = append(prob.Items, item)
		}
		want := concurrentPairs(prob, infos, order.HappensBefore)
		got := concurrentPairsByClock(prob, infos, order)
		if !slices.Equal(got, want) {
			t.Fatalf("iter %d: pairs %v, pairwise %v", iter, got, want)
		}
		found += len(want)
	}
	if found == 0 {
		t.Fatal("no concurrent pair in any case")
	}
}
