package analysis

import (
	"testing"
	"time"

	"github.com/subarena/subarena/bench"
)

func TestOrderedLowerBound(t *testing.T) {
	for _, w := range bench.Workloads(testing.Short()) {
		tr, _ := w.Build()
		p, _ := tr.Resolve()
		in, err := NewInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		olb, at := OrderedLowerBound(in)
		if olb < in.LiveLB {
			t.Errorf("%s: bound %d below LiveLB %d", w.Name, olb, in.LiveLB)
		}
		t.Logf("%-14s LiveLB %10d ordered bound %10d (%.3f LiveLB, at t=%d) in %v", w.Name, in.LiveLB, olb,
			float64(olb)/float64(in.LiveLB), at, time.Since(start).Round(time.Millisecond))
	}
}
