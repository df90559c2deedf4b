package browser

import (
	"fmt"
	"os"
	"testing"
	"time"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
)

// scaleConfig generates random programs with at least 10^4 alloc buffers.
var scaleConfig = bench.RandomConfig{Ops: 5000, Engines: 3, MaxLive: 24, MaxSize: 1 << 20, WaitPercent: 30,
	SyncPercent: 3, Programs: 6, Seed: 7}

// TestViewerScale opens the viewer on a random trace of at least 10^4 buffers under
// subrange-fenced and reports how long the page takes to load and draw in headless
// Chromium (a figure, never asserted: the machine is shared), how long a redraw after
// zooming and a hover take, and the page's size. It checks the page loads without
// errors and reports every piece of the timeline.
func TestViewerScale(t *testing.T) {
	start := time.Now()
	p := benchtest.Build(t, func() (*trace.Trace, error) { return bench.Random(scaleConfig) })
	if n := p.NumAllocs(); n < 10000 {
		t.Fatalf("the trace has %d buffers, want at least 10^4", n)
	}
	res, rep := benchtest.CheckedReplay(t, p, replay.Options{Policy: subarena.SubrangeFenced})
	page, err := bench.ViewerPage(p, bench.ViewerRun{Replay: res, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	path := writePage(t, page, "scale.html")
	built := time.Since(start)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tb, took := openFile(t, path)
	pieces := len(page.Runs[0].Pieces)
	if n := eval[int](tb, `window.subarenaViewer.pieceCount(0)`); n != pieces {
		t.Fatalf("the page reports %d pieces, the timeline has %d", n, pieces)
	}
	tm := eval[struct{ ParseMs, FirstDrawMs, ReadyMs float64 }](tb, `window.subarenaViewer.timings()`)
	redraw := eval[float64](tb, `(() => { const v = window.subarenaViewer.view();
		const t = performance.now(); window.subarenaViewer.setView(v.x0 + (v.x1 - v.x0) / 4, v.x1 - (v.x1 - v.x0) / 4, v.y0, v.y1);
		return performance.now() - t; })()`)
	at := tb.locate(`(() => { for (let i = 0; i < window.subarenaViewer.pieceCount(0); i += 97) {
		const p = window.subarenaViewer.locatePiece(0, i); if (p) return p; } return null; })()`)
	hoverStart := time.Now()
	text := tb.hover(at)
	hover := time.Since(hoverStart)
	if text == "" {
		t.Fatal("hovering a piece of the large trace shows nothing")
	}
	tb.screenshot("viewer-scale.png")
	tb.checkConsole()
	t.Logf("%d buffers, %d views, %d ops, %d steps: %d pieces, page %.1f MiB, built in %v",
		p.NumAllocs(), len(p.Views), len(p.Ops), len(p.Trace.Steps), pieces, float64(st.Size())/(1<<20),
		built.Round(time.Millisecond))
	t.Logf("render in headless Chromium: navigation to first frame %v (page clock %.0f ms: JSON %.0f ms, "+
		"first layout and draw %.0f ms); redraw after zoom %.1f ms; hover round trip %v",
		took.Round(time.Millisecond), tm.ReadyMs, tm.ParseMs, tm.FirstDrawMs, redraw, hover.Round(time.Millisecond))
	fmt.Fprintf(os.Stderr, "viewer scale: %d buffers, %d pieces, page %.1f MiB, first frame %.0f ms after navigation\n",
		p.NumAllocs(), pieces, float64(st.Size())/(1<<20), tm.ReadyMs)
}
