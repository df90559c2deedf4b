package sync

import (
	"errors"
	"testing"

	"github.com/subarena/subarena/internal/invariants"
)

// TestRetainBoundsHistory: with Retain on, a long run of submit/complete
// pairs on two engines keeps at most keep + 2 chunks of clocks per engine,
// and reuses dropped chunks instead of allocating new ones; the last keep
// completed ops still answer EventClock, and ordering questions about a
// forgotten op still kept in a chunk are answered from it.
func TestRetainBoundsHistory(t *testing.T) {
	tl := NewTimeline()
	e0, _ := tl.AddEngine("compute", Compute)
	e1, _ := tl.AddEngine("copy", Copy)
	const keep = 1000
	tl.Retain(keep)
	if tl.Retained() != keep {
		t.Fatalf("Retained %d, want %d", tl.Retained(), keep)
	}
	var last Event
	for i := range 20000 {
		a, err := tl.Submit(e0)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tl.Submit(e1, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := tl.Complete(b); err != nil { // completes a too
			t.Fatal(err)
		}
		last = a
		for e, h := range tl.hist[:2] {
			if stored := h.n - h.base; stored > keep+2*chunkLen {
				t.Fatalf("after %d pairs engine %d stores %d clocks, more than %d", i+1, e, stored, keep+2*chunkLen)
			}
		}
	}
	if f := tl.Forgotten(e0); f < 20000-keep-chunkLen {
		t.Fatalf("engine 0 forgot up to %d of 20000", f)
	}
	if _, err := tl.EventClock(Event{Engine: e0, Seq: 20000 - keep + 1}); err != nil {
		t.Fatalf("an op within the last %d completed is forgotten: %v", keep, err)
	}
	if len(tl.spare) > maxSpare {
		t.Fatalf("%d spare chunks", len(tl.spare))
	}
	// Allocation-free steady state: the chunks dropped are reused (the
	// invariant checks every mutator runs under the invariants tag
	// allocate).
	allocs := testing.AllocsPerRun(2000, func() {
		a, _ := tl.Submit(e0)
		_ = tl.Complete(a)
	})
	if allocs != 0 && !invariants.Enabled {
		t.Fatalf("%.2f allocations per submit/complete in steady state", allocs)
	}
	// A forgotten op whose chunk is kept still answers OrderedAfter from
	// its clock: op s of copy waited for op s of compute, not for op s+1.
	tl.Forget() // every completed op but each engine's last
	s := tl.hist[e1].base + 1
	if s > tl.Forgotten(e1) || last.Seq <= s {
		t.Fatalf("copy forgot up to %d, dropped up to %d: no forgotten op with its chunk kept", tl.Forgotten(e1), tl.hist[e1].base)
	}
	forgotten := Event{Engine: e1, Seq: s}
	if _, err := tl.EventClock(forgotten); !errors.Is(err, ErrForgotten) {
		t.Fatalf("EventClock of forgotten %v: %v", forgotten, err)
	}
	for _, c := range []struct {
		waited Seq
		want   bool
	}{{s, true}, {s + 1, false}} {
		var fence Clock
		fence.Observe(Event{Engine: e0, Seq: c.waited})
		if ok, err := tl.OrderedAfter(&fence, forgotten); err != nil || ok != c.want {
			t.Fatalf("%v after compute#%d: ordered %v, %v; want %v", forgotten, c.waited, ok, err, c.want)
		}
	}
	tl.Retain(0)
	f := tl.Forgotten(e0)
	for range 3 * chunkLen {
		a, _ := tl.Submit(e0)
		_ = tl.Complete(a)
	}
	if tl.Forgotten(e0) != f {
		t.Fatal("Retain(0) did not stop forgetting")
	}
}
