package bench

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/plan"
	"github.com/subarena/subarena/trace/replay"
)

const ggmlTiny = "../testdata/ggml/ggml-tiny.json"

// shiftPlan returns pl with every offset moved up by d (placements, relative to their
// hosts, move with them): the same plan, safe if pl is, with no host at offset 0.
func shiftPlan(pl *trace.Plan, d int64) *trace.Plan {
	out := *pl
	out.Size += d
	out.Offsets = maps.Clone(pl.Offsets)
	for n := range out.Offsets {
		out.Offsets[n] += d
	}
	return &out
}

// TestPlanTimelinePlacements draws the planner's plan for ggml-tiny, whose in-place
// outputs over strided inputs are placements: every placed buffer is drawn exactly at its
// footprint in its host (every byte of it, nothing else, never at offset 0 unless its
// host's footprint starts there), its segments name the host, and no two buffers hold a
// byte at once. The plan is drawn as planned and moved up so that no host sits at 0.
func TestPlanTimelinePlacements(t *testing.T) {
	p := benchtest.Program(t, ggmlTiny)
	res, err := plan.Plan(p.Trace, plan.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Placements) == 0 {
		t.Fatal("the ggml-tiny plan has no placements")
	}
	for _, d := range []int64{0, 3 * p.Trace.Granule} {
		pl := shiftPlan(res.Plan, d)
		if rep, err := check.Plan(p, pl); err != nil || !rep.Safe {
			t.Fatalf("shift %d: plan unsafe: %v %+v", d, err, rep)
		}
		tl, err := PlanTimeline(p, pl)
		if err != nil {
			t.Fatal(err)
		}
		if err := tl.CheckInvariants(); err != nil {
			t.Fatalf("shift %d: %v", d, err)
		}
		fr, err := trace.NewFrame(p, pl)
		if err != nil {
			t.Fatal(err)
		}
		drawn := map[string]*ranges.Set{}
		for _, s := range tl.Segments {
			if drawn[s.Buffer] == nil {
				drawn[s.Buffer] = &ranges.Set{}
			}
			if _, placed := pl.Placements[s.Buffer]; placed != (s.Host != "") ||
				(placed && s.Host != pl.Placements[s.Buffer].Of) {
				t.Fatalf("shift %d: segment %+v names host %q", d, s, s.Host)
			}
			drawn[s.Buffer].Add(ranges.Range{Lo: s.Lo, Hi: s.Hi})
		}
		for name, place := range pl.Placements {
			ref, _ := p.Lookup(name)
			own := fr.Bytes(ref.Buffer)
			want := shift(&own, pl.Offsets[place.Of])
			got := drawn[name]
			if got == nil || !got.Equal(&want) {
				t.Fatalf("shift %d: %s drawn over %v, its footprint in %s is %v", d, name, got, place.Of, want.String())
			}
			if got.Bounds().Lo == 0 && pl.Offsets[place.Of] != 0 {
				t.Fatalf("shift %d: %s drawn at offset 0, its host %s is at %d", d, name, place.Of, pl.Offsets[place.Of])
			}
			if host := pl.Offsets[place.Of]; got.Bounds().Lo < host || got.Bounds().Hi > host+p.Buffers[fr.Host(ref.Buffer)].Size {
				t.Fatalf("shift %d: %s drawn at %v outside its host %s", d, name, got.Bounds(), place.Of)
			}
		}
		var svg bytes.Buffer
		if err := tl.WriteSVG(&svg); err != nil {
			t.Fatal(err)
		}
		for name, place := range pl.Placements {
			if !strings.Contains(svg.String(), "<title>"+name+" over "+place.Of+" [") {
				t.Fatalf("shift %d: the picture does not draw %s over %s", d, name, place.Of)
			}
		}
		if !strings.Contains(svg.String(), "laid over its host") {
			t.Fatalf("shift %d: no legend for placed buffers", d)
		}
	}
}

// TestPlanTimelineLabel: a plan's picture is labelled as a plan, with the
// policy its file names, never as the policy its lifetimes are drawn with.
func TestPlanTimelineLabel(t *testing.T) {
	p := benchtest.Program(t, ggmlTiny)
	res := benchtest.Replay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	for _, c := range []struct{ policy, want string }{{"", "plan"}, {"subrange-fenced", "plan by subrange-fenced"}} {
		plan := *res.Plan
		plan.Policy = c.policy
		tl, err := PlanTimeline(p, &plan)
		if err != nil {
			t.Fatal(err)
		}
		if tl.Policy != c.want {
			t.Errorf("plan with policy %q: label %q, want %q", c.policy, tl.Policy, c.want)
		}
	}
}
