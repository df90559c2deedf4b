package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace/replay"
)

// viewerData is the part of a viewer page's embedded data these tests read.
type viewerData struct {
	Schema string
	Trace  string
	Runs   []struct {
		Label, Kind string
		HWM         int64
		LiveLB      int64
		Pieces      []json.RawMessage
		Checked     bool
		Violations  []struct {
			MissingEdge string `json:"missing_edge"`
			Earlier     struct{ Chain []string }
		}
	}
}

// readViewer reads the HTML page at path and decodes its data.
func readViewer(t *testing.T, path string) viewerData {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "<!DOCTYPE html>") || strings.Contains(string(data), "https://") {
		t.Fatalf("%s is not a self-contained HTML page", path)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="subarena-data">(.*?)</script>`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s embeds no data", path)
	}
	var v viewerData
	if err := json.Unmarshal(m[1], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// segments counts the pieces of p's timeline under pol.
func segments(t *testing.T, path string, pol subarena.Policy) int {
	t.Helper()
	p := benchtest.Program(t, path)
	tl, err := bench.ReplayTimeline(p, benchtest.Replay(t, p, replay.Options{Policy: pol}))
	if err != nil {
		t.Fatal(err)
	}
	return len(tl.Segments)
}

// TestVizHTML: viz --html writes one self-contained page per run asked for — a replay,
// ir-order with its violation drawn, two policies compared, a plan compared with a
// replay — each run with the timeline's pieces, checked; timeline.html is the default
// name; an unsafe plan is drawn and exits 1 as the SVG does.
func TestVizHTML(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(example)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "t.html")
	r := runClean(t, "viz", abs, "--html", "-o", page)
	if r.code != 0 || !strings.Contains(r.stderr, "wrote "+page) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	v := readViewer(t, page)
	if v.Schema != "subarena-viewer/v1" || v.Trace != "split-qkv" || len(v.Runs) != 1 || v.Runs[0].Label != "subrange-fenced" ||
		len(v.Runs[0].Pieces) != segments(t, abs, subarena.SubrangeFenced) || !v.Runs[0].Checked || len(v.Runs[0].Violations) != 0 {
		t.Fatalf("page data %+v", v)
	}

	r = runClean(t, "viz", abs, "--html", "-o", page, "--policy", "ir-order", "--compare", "whole-fenced")
	if r.code != 0 || !strings.Contains(r.stderr, "UNSAFE: 1 violations") {
		t.Fatalf("ir-order: exit %d: %s", r.code, r.stderr)
	}
	v = readViewer(t, page)
	if len(v.Runs) != 2 || v.Runs[0].Label != "ir-order" || v.Runs[1].Label != "whole-fenced" ||
		len(v.Runs[0].Violations) != 1 || v.Runs[0].Violations[0].MissingEdge != "offload_v -> use_tmp" ||
		strings.Join(v.Runs[0].Violations[0].Earlier.Chain, " ") != "v qkv" || len(v.Runs[1].Violations) != 0 ||
		len(v.Runs[1].Pieces) != segments(t, abs, subarena.WholeFenced) || v.Runs[0].HWM >= v.Runs[1].HWM {
		t.Fatalf("ir-order vs whole-fenced: %+v", v)
	}

	// A plan, compared with a replay; the default output name.
	safePlan, unsafePlan := filepath.Join(dir, "safe.json"), filepath.Join(dir, "unsafe.json")
	if out, code := runFresh(t, "replay", abs, "-o", safePlan, "--policy", "whole-after-users"); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, out)
	}
	if out, code := runFresh(t, "replay", abs, "-o", unsafePlan, "--policy", "ir-order"); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, out)
	}
	t.Chdir(dir)
	r = runClean(t, "viz", abs, "--html", "--plan", safePlan, "--compare", "subrange-fenced")
	if r.code != 0 || !strings.Contains(r.stderr, "wrote timeline.html") {
		t.Fatalf("plan vs replay: exit %d: %s", r.code, r.stderr)
	}
	v = readViewer(t, filepath.Join(dir, "timeline.html"))
	if len(v.Runs) != 2 || v.Runs[0].Kind != "plan" || !strings.HasPrefix(v.Runs[0].Label, "plan safe.json") ||
		v.Runs[1].Kind != "replay" || v.Runs[0].LiveLB != v.Runs[1].LiveLB || v.Runs[0].LiveLB == 0 {
		t.Fatalf("plan vs replay: %+v", v)
	}
	// An unsafe plan as the second run: drawn, with its violation, and exit 1.
	r = runClean(t, "viz", abs, "--html", "-o", page, "--compare-plan", unsafePlan)
	if r.code != 1 || !strings.Contains(r.stderr, "UNSAFE") || !strings.Contains(r.stderr, "wrote "+page) {
		t.Fatalf("unsafe plan: exit %d: %s", r.code, r.stderr)
	}
	if v = readViewer(t, page); len(v.Runs) != 2 || len(v.Runs[1].Violations) != 1 {
		t.Fatalf("unsafe plan: %+v", v)
	}
}

// TestVizHTMLGGMLDump draws the ggml-tiny graph from a subarena-trace/v1 file, as the
// ggml integration's Dump writes it, and from the ggml trace itself: the same page.
func TestVizHTMLGGMLDump(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "ggml-tiny.json")
	if out, code := runFresh(t, "import", ggmlTiny, "-o", dump); code != 0 {
		t.Fatalf("import: exit %d: %s", code, out)
	}
	a, b := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.html")
	for _, c := range [][2]string{{dump, a}, {ggmlTiny, b}} {
		if r := runClean(t, "viz", c[0], "--html", "-o", c[1]); r.code != 0 {
			t.Fatalf("viz %s: exit %d: %s", c[0], r.code, r.stderr)
		}
	}
	va, vb := readViewer(t, a), readViewer(t, b)
	if len(va.Runs[0].Pieces) == 0 || len(va.Runs[0].Pieces) != len(vb.Runs[0].Pieces) || va.Runs[0].HWM != vb.Runs[0].HWM {
		t.Fatalf("the dump draws %d pieces (HWM %d), the ggml trace %d (HWM %d)", len(va.Runs[0].Pieces), va.Runs[0].HWM,
			len(vb.Runs[0].Pieces), vb.Runs[0].HWM)
	}
}

// TestVizHTMLBadInput: bad flags are refused with exit 2 and a message naming the
// flag, before anything is written.
func TestVizHTMLBadInput(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "x.html")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"viz", example, "--html", "-o", page, "--compare", "nope"}, `subarena: --compare: invalid config: unknown policy "nope"`},
		{[]string{"viz", example, "-o", page, "--compare", "ir-order"}, "need --html"},
		{[]string{"viz", example, "-o", page, "--compare-plan", "p.json"}, "need --html"},
		{[]string{"viz", example, "--html", "-o", page, "--compare", "ir-order", "--compare-plan", "p.json"}, "give one of them"},
		{[]string{"viz", example, "--html", "-o", page, "--compare-plan", filepath.Join(dir, "none.json")}, "none.json"},
		{[]string{"viz", example, "--html", "-o", page, "--policy", "nope"}, "unknown policy"},
		{[]string{"viz", example, "--html", "-o", page, "--fit", "nope"}, "nope"},
		{[]string{"viz", example, "--html", "-o", filepath.Join(dir, "no", "such", "dir.html")}, "no such file or directory"},
	} {
		r := runClean(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) || !strings.HasPrefix(r.stderr, "subarena: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.msg)
		}
		if _, err := os.Stat(page); err == nil {
			t.Fatalf("%v wrote %s", c.args, page)
		}
	}
}
