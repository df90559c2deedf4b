package liveness

import (
	"fmt"
	"testing"

	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// copyEngineReclaims runs n steps of a compute engine handing data to a
// copy engine that is waited for only now and then, in a whole mode: each
// step a buffer is written on compute, its first half read on copy, the
// compute writer completes and the buffer is released, a piece its copy
// reader pins; every 64 steps the copy engine completes the first half of
// the reads so far, and those pieces return (half of them stay pinned). It checks the bytes held at the end
// and returns how many pieces (or pieces' runs) the Index looked at.
func copyEngineReclaims(t testing.TB, mode Mode, n int) int {
	const size, g = 64, 16
	x, err := New(g, mode)
	if err != nil {
		t.Fatal(err)
	}
	var freed int64
	free := func(r ranges.Range) { freed += r.Len() }
	var completed sasync.Clock
	for i := range n {
		seq := copyEngineStep(t, x, i, size, &completed, free)
		if i%64 == 63 {
			completed[1] = seq / 2
			x.Complete(&completed, free)
		}
	}
	pinned := int64(n) - int64(completed[1]) // buffers whose copy reader is pending
	if held := x.HeldBytes(); held != pinned*size || freed != int64(n)*size-held {
		t.Fatalf("%v: %d bytes held and %d freed, want %d held of %d", mode, held, freed, pinned*size, n*size)
	}
	if err := x.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return x.pieceVisits
}

// copyEngineStep is step i of the copy-engine pattern on x: buffer i of
// size bytes is written on compute (engine 0), its first half read on copy
// (engine 1), both as op i+1; compute completes that op (completed[0]) and
// the buffer is released. It returns the step's seq.
func copyEngineStep(t testing.TB, x *Index, i int, size int64, completed *sasync.Clock, free func(ranges.Range)) sasync.Seq {
	t.Helper()
	buf := ranges.Range{Lo: int64(i) * size, Hi: int64(i+1) * size}
	seq := sasync.Seq(i + 1)
	if _, err := x.AddUser(sasync.Event{Engine: 0, Seq: seq}, false, []ranges.Range{buf}); err != nil {
		t.Fatal(err)
	}
	half := ranges.Range{Lo: buf.Lo, Hi: buf.Lo + size/2}
	if _, err := x.AddUser(sasync.Event{Engine: 1, Seq: seq}, false, []ranges.Range{half}); err != nil {
		t.Fatal(err)
	}
	completed[0] = seq
	x.Complete(completed, free)
	rel := ranges.FromRanges(buf)
	if err := x.Release(&rel, free); err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestReclaimCostPerStep: a completion or release in whole mode looks at
// the pieces over the bytes whose pins it changed, not at every piece
// still pinned, so n steps with O(n) pieces pinned at once (a copy
// engine's reads, waited for rarely) look at O(n) pieces in all, not
// n²/2. The bound counts the pieces looked at, not time: 4 per step at
// two sizes (a pass over every piece on each completion and release
// looks at 3,129,160 at 2,000 steps).
func TestReclaimCostPerStep(t *testing.T) {
	checkCostPerStep(t, "pieces looked at", copyEngineReclaims, WholeAfterUsers, WholeFenced)
}

// checkCostPerStep fails t unless work, counted by cost over a copy-engine
// pattern of n steps, stays within 4 per step at 2,000 and 4,000 steps in
// each of modes.
func checkCostPerStep(t *testing.T, what string, cost func(testing.TB, Mode, int) int, modes ...Mode) {
	t.Helper()
	for _, mode := range modes {
		for _, n := range []int{2000, 4000} {
			if c := cost(t, mode, n); c > 4*n {
				t.Errorf("%v, %d steps: %d %s, more than %d", mode, n, c, what, 4*n)
			} else {
				t.Logf("%v, %d steps: %d %s", mode, n, c, what)
			}
		}
	}
}

// BenchmarkReclaimCopyEngine: copyEngineReclaims in whole fenced mode at a
// few sizes; ns/step stays flat as the pinned pieces grow.
func BenchmarkReclaimCopyEngine(b *testing.B) {
	benchCostPerStep(b, copyEngineReclaims, WholeFenced)
}

// benchCostPerStep runs cost's n-step copy-engine pattern in mode at a
// few sizes, reporting ns per step (flat when the cost is linear).
func benchCostPerStep(b *testing.B, cost func(testing.TB, Mode, int) int, mode Mode) {
	for _, n := range []int{10000, 20000, 40000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cost(b, mode, n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/step")
		})
	}
}
