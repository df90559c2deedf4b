package browser

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/plan"
	"github.com/subarena/subarena/trace/replay"
	"github.com/subarena/subarena/trace/tracefile"
)

const (
	splitQKV = "../../trace/testdata/split-qkv.json"
	ggmlTiny = "../../testdata/ggml/ggml-tiny.json"
)

func chainOf(p *trace.Program, ref trace.Ref) string { return strings.Join(p.Chain(ref), " → ") }

// TestViewerHoverSearchZoom opens split-qkv under subrange-fenced: the page reports as
// many pieces as the replay's timeline has; hovering the bytes V lets go while the copy
// engine still reads them names offload_v, its event, the chain v → qkv and the fence;
// hovering a live piece of qkv lists scores reading through kt → k → qkv; clicking
// selects qkv; the search box finds tmp; the wheel and a drag move the window.
func TestViewerHoverSearchZoom(t *testing.T) {
	p := benchtest.Program(t, splitQKV)
	res, rep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	tl, err := bench.ReplayTimeline(p, res)
	if err != nil {
		t.Fatal(err)
	}
	page, err := bench.ViewerPage(p, bench.ViewerRun{Replay: res, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := open(t, page)

	count := eval[int](tb, `window.subarenaViewer.pieceCount(0)`)
	attr := eval[int](tb, `Number(document.querySelector('canvas[data-run="0"]').dataset.pieces)`)
	if count != len(tl.Segments) || attr != len(tl.Segments) {
		t.Fatalf("the page has %d pieces (canvas says %d), the timeline %d", count, attr, len(tl.Segments))
	}
	drawn := eval[int](tb, `window.subarenaViewer.drawnCount(0)`)
	if drawn != len(tl.Segments) {
		t.Fatalf("the first frame drew %d of %d pieces", drawn, len(tl.Segments))
	}

	// The pending bytes of v: pinned by offload_v on the copy engine.
	offload, live := -1, -1
	for i, s := range tl.Segments {
		if s.Pending && len(s.Pins) == 1 && p.Ops[s.Pins[0].Op].Name == "offload_v" && offload < 0 {
			offload = i
		}
		if !s.Pending && s.Buffer == "qkv" && live < 0 {
			live = i
		}
	}
	if offload < 0 || live < 0 {
		t.Fatal("split-qkv has no pending piece pinned by offload_v, or no live piece of qkv")
	}
	pin := tl.Segments[offload].Pins[0]
	text := tb.hover(tb.locate(fmt.Sprintf(`window.subarenaViewer.locatePiece(0, %d)`, offload)))
	for _, want := range []string{"qkv", "pending", "pinned by", "offload_v", "reads via " + chainOf(p, pin.Ref),
		"copy#1", "fence {copy#1}", "clean at the end of the trace",
		fmt.Sprintf("bytes [%d, %d)", tl.Segments[offload].Lo, tl.Segments[offload].Hi)} {
		if !strings.Contains(text, want) {
			t.Errorf("hovering the piece pinned by offload_v: %q missing from the tooltip:\n%s", want, text)
		}
	}
	if chainOf(p, pin.Ref) != "v → qkv" {
		t.Errorf("offload_v reads through %q", chainOf(p, pin.Ref))
	}
	kt, _ := p.Lookup("kt")
	text = tb.hover(tb.locate(fmt.Sprintf(`window.subarenaViewer.locatePiece(0, %d)`, live)))
	for _, want := range []string{"live", "users", "proj", "writes via qkv", "scores", "reads via " + chainOf(p, kt),
		"let go by the release of qkv at step 8"} {
		if !strings.Contains(text, want) {
			t.Errorf("hovering a live piece of qkv: %q missing from the tooltip:\n%s", want, text)
		}
	}

	// A click selects the buffer under the pointer.
	at := tb.locate(fmt.Sprintf(`window.subarenaViewer.locatePiece(0, %d)`, live))
	tb.do(chromedp.MouseClickXY(at.X, at.Y))
	sel := eval[string](tb, `window.subarenaViewer.selected()`)
	if sel != "qkv" {
		t.Fatalf("clicking a piece of qkv selected %q", sel)
	}

	// The search box: typing lists tmp, Enter selects it and lists its pieces.
	tb.do(chromedp.Click(chromedp.CSS("#search")), chromedp.SendKeys(chromedp.CSS("#search"), "tm"))
	results := eval[string](tb, `document.getElementById('results').textContent`)
	if results != "tmp" {
		t.Fatalf("searching tm lists %q", results)
	}
	tb.do(chromedp.SendKeys(chromedp.CSS("#search"), kb.Enter))
	sel = eval[string](tb, `window.subarenaViewer.selected()`)
	detailPieces := eval[string](tb, `document.getElementById('details').dataset.pieces`)
	want := 0
	for _, s := range tl.Segments {
		if s.Buffer == "tmp" {
			want++
		}
	}
	if sel != "tmp" || detailPieces != fmt.Sprint(want) {
		t.Fatalf("after Enter: selected %q with %s pieces listed, want tmp with %d", sel, detailPieces, want)
	}

	// Zoom: the wheel narrows the steps, shift+wheel the offsets; a drag pans.
	type window struct{ X0, X1, Y0, Y1 float64 }
	view := func() window { return eval[window](tb, `window.subarenaViewer.view()`) }
	// The protocol needs both deltas of a wheel event, and the encoder leaves a zero
	// out: the sideways delta is a hair off zero (the page ignores it).
	wheel := func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1e-6, -400 }
	before := view()
	mid := point{at.X, at.Y}
	tb.do(chromedp.MouseEvent(chromedp.MouseWheel, mid.X, mid.Y, wheel))
	after := view()
	if !(after.X1-after.X0 < (before.X1-before.X0)*0.9) || after.Y1-after.Y0 != before.Y1-before.Y0 {
		t.Fatalf("the wheel took the window from %+v to %+v", before, after)
	}
	before = after
	tb.do(chromedp.MouseEvent(chromedp.MouseWheel, mid.X, mid.Y, wheel, chromedp.ButtonModifiers(chromedp.ModifierShift)))
	after = view()
	if !(after.Y1-after.Y0 < (before.Y1-before.Y0)*0.9) || after.X1-after.X0 != before.X1-before.X0 {
		t.Fatalf("shift+wheel took the window from %+v to %+v", before, after)
	}
	before = after
	tb.do(
		chromedp.MouseEvent(chromedp.MousePressed, mid.X, mid.Y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, mid.X-120, mid.Y+60, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, mid.X-120, mid.Y+60, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	)
	after = view()
	if after.X0 <= before.X0 || after.Y0 <= before.Y0 {
		t.Fatalf("dragging left and down moved the window from %+v to %+v", before, after)
	}
	tb.checkConsole()
}

// TestViewerIROrderViolation opens split-qkv under ir-order beside subrange-fenced: the
// ir-order panel shows the checker's violation, and hovering it names the overwritten
// bytes, the reader offload_v with its chain v → qkv, and the missing edge; the safe
// panel shows none. Both piece counts match their timelines. A screenshot is taken.
func TestViewerIROrderViolation(t *testing.T) {
	p := benchtest.Program(t, splitQKV)
	bad, badRep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.IROrder})
	good, goodRep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	if badRep.Safe || !goodRep.Safe {
		t.Fatalf("ir-order safe %v, subrange-fenced safe %v", badRep.Safe, goodRep.Safe)
	}
	page, err := bench.ViewerPage(p, bench.ViewerRun{Replay: bad, Report: badRep}, bench.ViewerRun{Replay: good, Report: goodRep})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := open(t, page)
	for r, res := range []*replay.Result{bad, good} {
		tl, err := bench.ReplayTimeline(p, res)
		if err != nil {
			t.Fatal(err)
		}
		n := eval[int](tb, fmt.Sprintf(`window.subarenaViewer.pieceCount(%d)`, r))
		v := eval[int](tb, fmt.Sprintf(`Number(document.querySelector('canvas[data-run="%d"]').dataset.violations)`, r))
		want := len(badRep.Violations)
		if r == 1 {
			want = 0
		}
		if n != len(tl.Segments) || v != want {
			t.Fatalf("run %d: %d pieces and %d violations drawn, want %d and %d", r, n, v, len(tl.Segments), want)
		}
	}
	v := badRep.Violations[0]
	text := tb.hover(tb.locate(`window.subarenaViewer.locateViolation(0, 0)`))
	for _, want := range []string{"UNSAFE", "overwritten bytes", fmt.Sprintf("[%d, %d)", v.Ranges[0].Lo, v.Ranges[0].Hi),
		"reader " + v.Earlier.Op, "via " + strings.Join(v.Earlier.Chain, " → "), "writer " + v.Later.Op,
		"missing edge " + v.MissingEdge()} {
		if !strings.Contains(text, want) {
			t.Errorf("hovering the violation: %q missing from the tooltip:\n%s", want, text)
		}
	}
	if v.MissingEdge() != "offload_v -> use_tmp" || strings.Join(v.Earlier.Chain, " → ") != "v → qkv" {
		t.Errorf("the violation is %s", v.String())
	}
	tb.screenshot("viewer-ir-order.png")
	tb.checkConsole()
}

// TestViewerGGMLPlanVsReplay opens the ggml-tiny graph, written as the ggml
// integration's Dump writes it (an ordinary subarena-trace/v1 file), with the planner's
// plan (in-place outputs over strided inputs are placements) beside the
// subrange-fenced replay: the page loads, each panel's piece count matches its
// timeline, the plan's panel says it is below LiveLB because of its relaid buffers, and
// a placed buffer's piece names its host.
func TestViewerGGMLPlanVsReplay(t *testing.T) {
	tr, err := tracefile.Load(ggmlTiny)
	if err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := trace.Write(&dump, tr); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ggml-tiny.trace.json")
	if err := os.WriteFile(path, dump.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := benchtest.Program(t, path)
	pr, err := plan.Plan(p.Trace, plan.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	planRep, err := check.Plan(p, pr.Plan)
	if err != nil || !planRep.Safe {
		t.Fatalf("the plan: %v %+v", err, planRep)
	}
	res, rep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	page, err := bench.ViewerPage(p, bench.ViewerRun{Plan: pr.Plan, Report: planRep}, bench.ViewerRun{Replay: res, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := open(t, page)
	planTL, err := bench.PlanTimeline(p, pr.Plan)
	if err != nil {
		t.Fatal(err)
	}
	replayTL, err := bench.ReplayTimeline(p, res)
	if err != nil {
		t.Fatal(err)
	}
	counts := eval[[]int](tb, `[0, 1].map(r => window.subarenaViewer.pieceCount(r))`)
	if len(counts) != 2 || counts[0] != len(planTL.Segments) || counts[1] != len(replayTL.Segments) {
		t.Fatalf("piece counts %v, timelines %d and %d", counts, len(planTL.Segments), len(replayTL.Segments))
	}
	// The plan (8 buffers relaid) is below LiveLB, which bounds offset layouts only: its
	// panel says so, with no negative overhead.
	head := eval[string](tb, `document.querySelectorAll('.panel-head')[0].textContent`)
	if !strings.Contains(head, "below LiveLB, which bounds offset layouts only (8 buffers relaid)") || strings.Contains(head, "overhead") {
		t.Errorf("the plan's panel says %q", head)
	}
	placed := -1
	for i, s := range planTL.Segments {
		if s.Host != "" {
			placed = i
			break
		}
	}
	if placed < 0 {
		t.Fatal("the plan draws no placed buffer")
	}
	s := planTL.Segments[placed]
	eval[bool](tb, fmt.Sprintf(`window.subarenaViewer.setView(%d, %d, %d, %d), true`, s.From-2, s.To+2, s.Lo-4*(s.Hi-s.Lo),
		s.Hi+4*(s.Hi-s.Lo)))
	text := tb.hover(tb.locate(fmt.Sprintf(`window.subarenaViewer.locatePiece(0, %d)`, placed)))
	if !strings.Contains(text, s.Buffer) || !strings.Contains(text, "laid over "+s.Host) {
		t.Fatalf("hovering %s placed over %s:\n%s", s.Buffer, s.Host, text)
	}
	tb.checkConsole()
}

// TestViewerWorkload opens the llama-engines workload (quick setting) under
// subrange-fenced beside ir-order and hovers a pending piece that an op on another
// engine pins through a view: the tooltip shows that chain. Its screenshot
// is the one README.md shows: SUBARENA_VIEWER_PNG names where to write it.
func TestViewerWorkload(t *testing.T) {
	w, err := bench.LookupWorkload("llama-engines", true)
	if err != nil {
		t.Fatal(err)
	}
	p := benchtest.Build(t, w.Build)
	good, goodRep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	bad, badRep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.IROrder})
	page, err := bench.ViewerPage(p, bench.ViewerRun{Replay: good, Report: goodRep}, bench.ViewerRun{Replay: bad, Report: badRep})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := bench.ReplayTimeline(p, good)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := open(t, page)
	if n := eval[int](tb, `window.subarenaViewer.pieceCount(0)`); n != len(tl.Segments) {
		t.Fatalf("the page has %d pieces, the timeline %d", n, len(tl.Segments))
	}
	if n := eval[int](tb, `window.subarenaViewer.violationCount(1)`); n != len(badRep.Violations) || n == 0 {
		t.Fatalf("the ir-order panel draws %d violations, check finds %d", n, len(badRep.Violations))
	}
	// The largest pending piece pinned through a view, by an op
	// on an engine other than the one that allocated the buffer.
	best := -1
	for i, s := range tl.Segments {
		if !s.Pending || len(s.Pins) != 1 || len(p.Chain(s.Pins[0].Ref)) < 2 ||
			p.Ops[s.Pins[0].Op].Engine == p.Buffers[s.Index].Engine {
			continue
		}
		if best < 0 || (s.Hi-s.Lo)*int64(s.To-s.From) > (tl.Segments[best].Hi-tl.Segments[best].Lo)*int64(tl.Segments[best].To-tl.Segments[best].From) {
			best = i
		}
	}
	if best < 0 {
		t.Fatal("llama-engines has no pending piece pinned through a view from another engine")
	}
	s := tl.Segments[best]
	pin := s.Pins[0]
	eval[bool](tb, fmt.Sprintf(`window.subarenaViewer.setView(%d, %d, 0, %d), true`, max(0, s.From-3*(s.To-s.From)),
		s.To+3*(s.To-s.From), tl.HWM+tl.HWM/10))
	text := tb.hover(tb.locate(fmt.Sprintf(`window.subarenaViewer.locatePiece(0, %d)`, best)))
	engine := p.Trace.Engines[p.Ops[pin.Op].Engine]
	for _, want := range []string{s.Buffer, "pinned by", p.Ops[pin.Op].Name, "via " + chainOf(p, pin.Ref), engine + "#", "fence {"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing from the tooltip:\n%s", want, text)
		}
	}
	tb.checkConsole()
	shot := tb.screenshot("viewer-llama-engines.png")
	if dst := os.Getenv("SUBARENA_VIEWER_PNG"); dst != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", dst)
	}
}
