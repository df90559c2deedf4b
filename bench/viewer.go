package bench

import (
	"errors"
	"fmt"
	"strings"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/htmlviz"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// ViewerRun is one run for ViewerPage: a replay or a plan of the trace (exactly one of
// Replay and Plan), and what the checker said of it.
type ViewerRun struct {
	// Label names the run in its panel; empty: the replay's policy, or the plan's title
	// as PlanTimeline gives it.
	Label  string
	Replay *replay.Result
	Plan   *trace.Plan
	// Report is check.Plan's report on the run's plan (for a replay, its Plan); nil
	// when the run was not checked.
	Report *check.Report
}

// ErrViewer is matched (errors.Is) by the errors ViewerPage returns for runs
// it cannot draw.
var ErrViewer = errors.New("bench: viewer")

// ViewerPage builds the page of the interactive memory viewer (package htmlviz) for
// one or more runs of p, drawn one above the other on one time axis. Each run is laid
// out as ReplayTimeline or PlanTimeline lays it out; every piece also carries the ops
// using its bytes (live) or pinning them (pending), with the view each op names. Op
// times and LiveLB come from the schedule, which no placement changes: from the first
// replay among runs, or from a replay under subrange-fenced when every run is a plan.
// A plan that does not fit p is an error matching trace.ErrPlan.
func ViewerPage(p *trace.Program, runs ...ViewerRun) (*htmlviz.Page, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: no runs", ErrViewer)
	}
	var sched *replay.Result
	for i, r := range runs {
		if (r.Replay == nil) == (r.Plan == nil) {
			return nil, fmt.Errorf("%w: run %d needs exactly one of a replay and a plan", ErrViewer, i)
		}
		if sched == nil && r.Replay != nil {
			sched = r.Replay
		}
	}
	if sched == nil {
		res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
		if err != nil {
			return nil, err
		}
		sched = res
	}
	tl, err := newTimeline(p)
	if err != nil {
		return nil, err
	}
	page := &htmlviz.Page{Trace: p.Trace.Name, Granule: p.Trace.Granule, Steps: len(p.Trace.Steps),
		Engines: p.Trace.Engines}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		page.Buffers = append(page.Buffers, htmlviz.Buffer{Name: buf.Name, Size: buf.Size, External: buf.External,
			Step: buf.Step, Release: buf.Release})
	}
	for _, v := range p.Views {
		page.Views = append(page.Views, htmlviz.View{Name: v.Name, Buffer: v.Buffer, Parent: v.Parent, Step: v.Step,
			Discard: v.Discard})
	}
	seq := make([]int, len(p.Trace.Engines))
	for k := range p.Ops {
		op := &p.Ops[k]
		seq[op.Engine]++
		o := htmlviz.Op{Name: op.Name, Engine: op.Engine, Seq: seq[op.Engine], Step: op.Step, Done: tl.observed[k],
			Start: -1, End: -1}
		if k < len(sched.OpTimes) && sched.OpTimes[k].Op == op.Name {
			o.Start, o.End = sched.OpTimes[k].Start, sched.OpTimes[k].End
		}
		page.Ops = append(page.Ops, o)
	}
	var labels []string
	for _, r := range runs {
		run, err := viewerRun(p, tl, r)
		if err != nil {
			return nil, err
		}
		run.LiveLB = sched.LiveLB
		page.Runs = append(page.Runs, run)
		labels = append(labels, run.Label)
	}
	page.Title = fmt.Sprintf("memory timeline: %s under %s", p.Trace.Name, strings.Join(labels, " vs "))
	return page, page.Validate()
}

// viewerRun lays out one run.
func viewerRun(p *trace.Program, tl *timeline, r ViewerRun) (htmlviz.Run, error) {
	var (
		t   *Timeline
		f   *frame
		err error
	)
	run := htmlviz.Run{Label: r.Label}
	if r.Replay != nil {
		run.Kind = "replay"
		if t, err = ReplayTimeline(p, r.Replay); err != nil {
			return run, err
		}
		offsets := make(map[string]int64, len(r.Replay.Lifetimes))
		for _, lt := range r.Replay.Lifetimes {
			offsets[lt.Buffer] = lt.Offset
		}
		if f, err = offsetFrame(p, offsets); err != nil {
			return run, err
		}
	} else {
		run.Kind = "plan"
		run.Relaid = len(r.Plan.Placements)
		if t, err = PlanTimeline(p, r.Plan); err != nil {
			return run, err
		}
		if f, err = planFrame(p, r.Plan); err != nil {
			return run, err
		}
	}
	if run.Label == "" {
		run.Label = t.Policy
	}
	run.HWM, run.HighWater = t.HWM, t.HighWater
	// The arena bytes each use of a buffer reaches, per buffer, computed once.
	type arenaUse struct {
		use htmlviz.Use
		set ranges.Set
	}
	uses := map[int][]arenaUse{}
	usesOf := func(b int) []arenaUse {
		if us, ok := uses[b]; ok {
			return us
		}
		var us []arenaUse
		for _, u := range tl.usesOf[b] {
			fp, _ := f.fp(u.ref)
			us = append(us, arenaUse{viewerUse(p, u.op, u.ref), shift(&fp, f.off[b])})
		}
		uses[b] = us
		return us
	}
	for _, s := range t.Segments {
		pc := htmlviz.Piece{Buffer: s.Index, Lo: s.Lo, Hi: s.Hi, From: s.From, To: s.To, Pending: s.Pending,
			Holder: s.Holder, Host: -1}
		if f.host[s.Index] >= 0 {
			pc.Host = f.host[s.Index]
		}
		if s.Pending {
			for _, pin := range s.Pins {
				pc.Users = append(pc.Users, viewerUse(p, pin.Op, pin.Ref))
			}
		} else {
			for _, u := range usesOf(s.Index) {
				if _, ok := u.set.Overlaps(ranges.Range{Lo: s.Lo, Hi: s.Hi}); ok {
					pc.Users = append(pc.Users, u.use)
				}
			}
		}
		run.Pieces = append(run.Pieces, pc)
	}
	if r.Report != nil {
		run.Checked = true
		step := func(op string) int {
			if k, ok := p.OpIndex(op); ok {
				return p.Ops[k].Step
			}
			return -1
		}
		for _, v := range r.Report.Violations {
			hv := htmlviz.Violation{Rule: v.Rule, Bytes: v.Bytes, Earlier: v.Earlier,
				Later: v.Later, MissingEdge: v.MissingEdge(), From: step(v.Earlier.Op), To: step(v.Later.Op)}
			for _, rg := range v.Ranges {
				hv.Ranges = append(hv.Ranges, [2]int64{rg.Lo, rg.Hi})
			}
			run.Violations = append(run.Violations, hv)
		}
	}
	return run, nil
}

// viewerUse is op k's use of ref: the view it names (-1: the buffer) and its access.
func viewerUse(p *trace.Program, k int, ref trace.Ref) htmlviz.Use {
	u := htmlviz.Use{Op: k, View: ref.View, Access: trace.AccessRead.String()}
	for _, x := range p.Ops[k].Uses {
		if x.Ref == ref {
			u.Access = x.Access.String()
			break
		}
	}
	return u
}
