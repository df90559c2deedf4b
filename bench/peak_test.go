package bench

import (
	"bytes"
	"math"
	"sync"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
)

// replayed is one quick workload replayed under one policy.
type replayed struct {
	name string
	p    *trace.Program
	res  *replay.Result
}

var (
	replayOnce sync.Once
	replays    []replayed
	replayErr  error
)

// replayQuick replays every quick workload under every policy (lean fit),
// once for all tests.
func replayQuick(t *testing.T) []replayed {
	t.Helper()
	replayOnce.Do(func() { replays, replayErr = replayAll(subarena.Policies()...) })
	if replayErr != nil {
		t.Fatal(replayErr)
	}
	return replays
}

func replayAll(policies ...subarena.Policy) ([]replayed, error) {
	var out []replayed
	for _, w := range Workloads(true) {
		tr, err := w.Build()
		if err != nil {
			return nil, err
		}
		p, err := tr.Resolve()
		if err != nil {
			return nil, err
		}
		for _, pol := range policies {
			res, err := replay.Run(p, replay.Options{Policy: pol, Fit: arena.FitLean})
			if err != nil {
				return nil, err
			}
			out = append(out, replayed{w.Name, p, res})
		}
	}
	return out, nil
}

// The occupancy peakFragmentation rebuilds from the plan and the trace
// must agree with the Allocator's own in-use count, step after step (a
// sample of steps, and the peak), under every policy: the replay is the
// oracle.
func TestOccupancyMatchesReplay(t *testing.T) {
	for _, r := range replayQuick(t) {
		tl, err := newTimeline(r.p)
		if err != nil {
			t.Fatal(err)
		}
		n := len(r.res.Steps)
		stride := max(1, n/40)
		check := []int{peakStep(r.res)}
		for k := 0; k < n; k += stride {
			check = append(check, k)
		}
		for _, k := range check {
			used := occupancy(r.p, tl, r.res, k)
			aligned := used.AlignOut(r.p.Trace.Granule)
			if got, want := aligned.Len(), r.res.Steps[k].InUse; got != want {
				t.Fatalf("%s/%v step %d (%s %s): rebuilt %d B in use, replay says %d B", r.name, r.res.Policy, k,
					r.p.Trace.Steps[k].Kind, r.p.Trace.Steps[k].Name, got, want)
			}
		}
		frag, ok, err := peakFragmentation(r.p, r.res)
		if err != nil || !ok || frag < 0 || frag >= 1 || math.IsNaN(frag) {
			t.Fatalf("%s/%v: fragmentation %v ok %v err %v", r.name, r.res.Policy, frag, ok, err)
		}
	}
}

// gapFragmentation against a byte-map model on random free lists.
func TestGapFragmentationModel(t *testing.T) {
	g := NewSplitMix64(3)
	for iter := 0; iter < 300; iter++ {
		limit := int64(1 + g.Next()%200)
		var free []arena.Block
		var at int64
		for at < 260 {
			at += int64(g.Next() % 20)
			n := int64(1 + g.Next()%30)
			free = append(free, arena.Block{Offset: at, Size: n})
			at += n + 1 // blocks never touch
		}
		isFree := make([]bool, limit)
		for _, f := range free {
			for x := f.Offset; x < f.End() && x < limit; x++ {
				isFree[x] = true
			}
		}
		var total, largest, run int64
		for _, b := range isFree {
			if b {
				total++
				run++
				largest = max(largest, run)
			} else {
				run = 0
			}
		}
		want := 0.0
		if total > 0 {
			want = 1 - float64(largest)/float64(total)
		}
		if got := gapFragmentation(free, limit); math.Abs(got-want) > 1e-12 {
			t.Fatalf("iteration %d: %v, want %v", iter, got, want)
		}
	}
}

// Timelines of every quick workload under every policy keep their
// invariants, and draw as well-formed SVG.
func TestTimelines(t *testing.T) {
	for i, r := range replayQuick(t) {
		tl, err := ReplayTimeline(r.p, r.res)
		if err != nil {
			t.Fatal(err)
		}
		if err := tl.CheckInvariants(); err != nil {
			t.Fatalf("%s/%v: %v", r.name, r.res.Policy, err)
		}
		pending := false
		for _, s := range tl.Segments {
			pending = pending || s.Pending
		}
		if r.res.Policy == subarena.IROrder && pending {
			t.Fatalf("%s: ir-order timeline has pending bytes", r.name)
		}
		if r.res.Policy == subarena.WholeAfterUsers && r.name != "llama" && !pending {
			t.Fatalf("%s: whole-after-users timeline has no pending bytes", r.name)
		}
		if i%5 == 0 { // one SVG per workload is enough
			var buf bytes.Buffer
			if err := tl.WriteSVG(&buf); err != nil {
				t.Fatal(err)
			}
			checkSVG(t, buf.Bytes())
		}
	}
}

// A timeline whose live segments overlap is caught.
func TestTimelineInvariantsCatchOverlap(t *testing.T) {
	tl := &Timeline{Steps: 4, HWM: 100, HighWater: []int64{50, 100, 100, 100}, Segments: []Segment{
		{Buffer: "a", Lo: 0, Hi: 50, From: 0, To: 3},
		{Buffer: "b", Lo: 40, Hi: 100, From: 2, To: 4},
	}}
	if err := tl.CheckInvariants(); err == nil {
		t.Fatal("overlap not caught")
	}
	tl.Segments[1].From = 3
	if err := tl.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	tl.HighWater[2] = 10
	if err := tl.CheckInvariants(); err == nil {
		t.Fatal("falling high-water mark not caught")
	}
}

// A plan drawn without a replay: the first-fit plans of the quick
// workloads; an incomplete plan is rejected with trace.ErrPlan.
func TestPlanTimelineAndFirstFit(t *testing.T) {
	for _, w := range Workloads(true) {
		p := benchtest.Build(t, w.Build)
		for _, pol := range []subarena.Policy{subarena.IROrder, subarena.WholeAfterUsers} {
			ff, err := FirstFitPlan(p, pol)
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.CheckPlan(p, ff.Plan); err != nil {
				t.Fatalf("%s: %v", w.Name, err)
			}
			var top int64
			for b := range p.Buffers {
				if !p.Buffers[b].External {
					top = max(top, ff.Plan.Offsets[p.Buffers[b].Name]+p.Buffers[b].Size)
				}
			}
			if ff.Plan.Size != ff.HWM || top > ff.HWM || ff.HWM-top >= p.Trace.Granule {
				t.Fatalf("%s: size %d, HWM %d, top %d", w.Name, ff.Plan.Size, ff.HWM, top)
			}
			if pol == subarena.WholeAfterUsers {
				tl, err := PlanTimeline(p, ff.Plan)
				if err != nil {
					t.Fatal(err)
				}
				if err := tl.CheckInvariants(); err != nil {
					t.Fatalf("%s: %v", w.Name, err)
				}
			}
		}
		if _, err := FirstFitPlan(p, subarena.SubrangeFenced); err == nil {
			t.Fatal("first-fit under a fenced policy accepted")
		}
		bad := &trace.Plan{Trace: p.Trace.Name, Size: 1, Offsets: map[string]int64{}}
		if _, err := PlanTimeline(p, bad); err == nil {
			t.Fatalf("%s: incomplete plan accepted", w.Name)
		}
	}
}

// shift moves every run.
func TestShift(t *testing.T) {
	s := ranges.FromRanges(ranges.Range{Lo: 0, Hi: 4}, ranges.Range{Lo: 10, Hi: 12})
	got := shift(&s, 100)
	want := ranges.FromRanges(ranges.Range{Lo: 100, Hi: 104}, ranges.Range{Lo: 110, Hi: 112})
	if !got.Equal(&want) {
		t.Fatalf("%v", got.String())
	}
}
