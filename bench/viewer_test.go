package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/htmlviz"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/plan"
	"github.com/subarena/subarena/trace/replay"
)

const splitQKV = "../trace/testdata/split-qkv.json"

// TestViewerPageSplitQKV: the page of split-qkv under subrange-fenced has one piece per
// timeline segment, in order and at the same place; a live piece lists every op using
// its bytes with the name it used, a pending one exactly the uses pinning it; op seqs
// count per engine; the ir-order run's violation carries the steps of its ops.
func TestViewerPageSplitQKV(t *testing.T) {
	p := benchtest.Program(t, splitQKV)
	good := benchtest.Replay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	bad, rep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.IROrder})
	if rep.Safe {
		t.Fatalf("ir-order: %+v", rep)
	}
	page, err := ViewerPage(p, ViewerRun{Replay: good}, ViewerRun{Label: "unsafe", Replay: bad, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := ReplayTimeline(p, good)
	if err != nil {
		t.Fatal(err)
	}
	run := page.Runs[0]
	if run.Label != "subrange-fenced" || run.Kind != "replay" || run.HWM != good.HWM || run.LiveLB != good.LiveLB ||
		run.Checked || page.Runs[1].Label != "unsafe" || !page.Runs[1].Checked {
		t.Fatalf("runs %q %q %d %d %v, %q %v", run.Label, run.Kind, run.HWM, run.LiveLB, run.Checked, page.Runs[1].Label,
			page.Runs[1].Checked)
	}
	if len(run.Pieces) != len(tl.Segments) {
		t.Fatalf("%d pieces for %d segments", len(run.Pieces), len(tl.Segments))
	}
	name := func(k int, ref trace.Ref, access string) string {
		return p.Ops[k].Name + " " + access + "s " + p.Name(ref)
	}
	for i, s := range tl.Segments {
		pc := run.Pieces[i]
		if page.Buffers[pc.Buffer].Name != s.Buffer || pc.Lo != s.Lo || pc.Hi != s.Hi || pc.From != s.From || pc.To != s.To ||
			pc.Pending != s.Pending || pc.Host != -1 {
			t.Fatalf("piece %d %+v, segment %+v", i, pc, s)
		}
		var got []string
		for _, u := range pc.Users {
			ref := trace.Ref{Buffer: pc.Buffer, View: u.View}
			got = append(got, name(u.Op, ref, u.Access))
		}
		want := segmentUsers(p, good, s, name)
		if !slices.Equal(got, want) {
			t.Errorf("piece %d of %s [%d, %d): users %v, want %v", i, s.Buffer, s.Lo, s.Hi, got, want)
		}
		if s.Buffer == "qkv" && !s.Pending && s.Lo == off(good, "qkv") && !slices.Contains(got, "scores reads kt") {
			t.Errorf("the first live piece of qkv does not list scores reading kt: %v", got)
		}
	}
	seqs := map[string]int{}
	for _, op := range page.Ops {
		seqs[page.Engines[op.Engine]]++
		if op.Seq != seqs[page.Engines[op.Engine]] || op.Start < 0 || op.End <= op.Start || op.Done != page.Steps {
			t.Errorf("op %+v", op)
		}
	}
	v := page.Runs[1].Violations[0]
	if v.MissingEdge != "offload_v -> use_tmp" || v.From != 7 || v.To != 10 || len(v.Ranges) == 0 ||
		!slices.Equal(v.Earlier.Chain, []string{"v", "qkv"}) {
		t.Fatalf("violation %+v", v)
	}
}

func off(res *replay.Result, buffer string) int64 { return res.Plan.Offsets[buffer] }

// segmentUsers lists, as name writes them, the uses a piece of segment s of
// res's timeline must list: a pending piece exactly the uses pinning it, a
// live one every use of the buffer whose bytes meet the piece's, in op order.
func segmentUsers(p *trace.Program, res *replay.Result, s Segment, name func(k int, ref trace.Ref, access string) string) []string {
	var want []string
	if s.Pending {
		for _, pin := range s.Pins {
			for _, u := range p.Ops[pin.Op].Uses {
				if u.Ref == pin.Ref {
					want = append(want, name(pin.Op, pin.Ref, u.Access.String()))
				}
			}
		}
		return want
	}
	off := res.Plan.Offsets[s.Buffer]
	for k := range p.Ops {
		for _, u := range p.Ops[k].Uses {
			fp, _ := p.Footprint(u.Ref)
			if u.Ref.Buffer != s.Index {
				continue
			}
			if _, ok := fp.Overlaps(ranges.Range{Lo: s.Lo - off, Hi: s.Hi - off}); ok {
				want = append(want, name(k, u.Ref, u.Access.String()))
			}
		}
	}
	return want
}

// TestViewerPageRuns: a run needs exactly one of a replay and a plan; a plan alone gets
// op times and LiveLB from a replay of its own; a plan that does not fit is ErrPlan.
func TestViewerPageRuns(t *testing.T) {
	p := benchtest.Program(t, splitQKV)
	res := benchtest.Replay(t, p, replay.Options{Policy: subarena.WholeAfterUsers})
	for _, runs := range [][]ViewerRun{nil, {{}}, {{Replay: res, Plan: res.Plan}}} {
		if _, err := ViewerPage(p, runs...); !errors.Is(err, ErrViewer) {
			t.Errorf("%d runs: %v", len(runs), err)
		}
	}
	page, err := ViewerPage(p, ViewerRun{Plan: res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	if r := page.Runs[0]; r.Kind != "plan" || r.LiveLB != res.LiveLB || r.HWM != res.Plan.Size || page.Ops[0].End <= 0 {
		t.Fatalf("plan run %q %q HWM %d LiveLB %d (replay %d), first op ends at %d", r.Label, r.Kind, r.HWM, r.LiveLB,
			res.LiveLB, page.Ops[0].End)
	}
	short := *res.Plan
	short.Offsets = map[string]int64{"qkv": 0}
	if _, err := ViewerPage(p, ViewerRun{Plan: &short}); !errors.Is(err, trace.ErrPlan) {
		t.Fatalf("a plan missing tmp: %v", err)
	}
}

// TestViewerPageRelaidPlan: a plan laying buffers over strided footprints of others
// (ggml-tiny's plan: 8 placements, 241,792 B) is below LiveLB (297,088 B), which bounds
// offset layouts only; its run counts the relaid buffers, and the page says the plan is
// below LiveLB and why rather than printing a negative overhead.
func TestViewerPageRelaidPlan(t *testing.T) {
	p := benchtest.Program(t, "../testdata/ggml/ggml-tiny.json")
	res, err := plan.Plan(p.Trace, plan.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	page, err := ViewerPage(p, ViewerRun{Plan: res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	r := page.Runs[0]
	if r.Relaid != len(res.Plan.Placements) || r.Relaid == 0 || r.HWM >= r.LiveLB {
		t.Fatalf("relaid %d (plan %d), HWM %d, LiveLB %d", r.Relaid, len(res.Plan.Placements), r.HWM, r.LiveLB)
	}
	var b strings.Builder
	if err := htmlviz.Write(&b, page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "below LiveLB, which bounds offset layouts only") || !strings.Contains(b.String(), `"relaid":8`) {
		t.Error("the page does not say that a relaid plan below LiveLB is outside its bound")
	}
}
