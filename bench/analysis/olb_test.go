package analysis

import (
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace/replay"
)

// TestOrderedLowerBound: the ordered lower bound is at least LiveLB, and no
// safe policy's replay, under either fit, goes below it (it bounds every
// safe plan of the host program as written).
func TestOrderedLowerBound(t *testing.T) {
	for _, w := range testWorkloads() {
		p, in := infoOf(t, w)
		olb, at := orderedLowerBound(in)
		if olb < in.LiveLB {
			t.Errorf("%s: bound %d below LiveLB %d", w.Name, olb, in.LiveLB)
		}
		for _, pol := range subarena.Policies() {
			if !pol.Safe() {
				continue
			}
			for _, fit := range []arena.Fit{arena.FitFast, arena.FitLean} {
				res, err := replay.Run(p, replay.Options{Policy: pol, Fit: fit})
				if err != nil {
					t.Fatal(err)
				}
				if res.HWM < olb {
					t.Errorf("%s %v %v: replay HWM %d below the ordered bound %d (at t=%d)", w.Name, pol, fit, res.HWM, olb, at)
				}
			}
		}
		t.Logf("%-14s LiveLB %10d ordered bound %10d (%.3f LiveLB, at t=%d)", w.Name, in.LiveLB, olb,
			float64(olb)/float64(in.LiveLB), at)
	}
}
