package htmlviz

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// tiny is a page of one buffer with a view, two ops and one run of two pieces: a live
// one and a pending one pinned by the second op through the view.
func tiny() *Page {
	return &Page{
		Trace: "tiny </script><b>", Granule: 256, Steps: 5, Engines: []string{"compute", "copy"},
		Buffers: []Buffer{{Name: "a", Size: 512, Step: 0, Release: 3}},
		Views:   []View{{Name: "v", Buffer: 0, Parent: -1, Step: 1, Discard: -1}},
		Ops: []Op{{Name: "w", Engine: 0, Seq: 1, Step: 2, Done: 5, Start: 0, End: 1},
			{Name: "r", Engine: 1, Seq: 1, Step: 2, Done: 5, Start: 1, End: 9}},
		Runs: []Run{{Label: "subrange-fenced", Kind: "replay", HWM: 512, LiveLB: 512, HighWater: []int64{512, 512, 512, 512, 512},
			Pieces: []Piece{
				{Buffer: 0, Lo: 0, Hi: 512, From: 0, To: 3, Holder: -1, Host: -1,
					Users: []Use{{Op: 0, View: -1, Access: "write"}, {Op: 1, View: 0, Access: "read"}}},
				{Buffer: 0, Lo: 256, Hi: 512, From: 3, To: 5, Pending: true, Holder: -1, Host: -1,
					Users: []Use{{Op: 1, View: 0, Access: "read"}}},
			}, Checked: true}},
	}
}

// TestWriteSelfContained: the page is one HTML document with the script and style
// inline, referring to nothing outside itself, and its data parses back to the page's
// pieces in the documented array form.
func TestWriteSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, tiny()); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, bad := range []string{"http://", "https://", " src=", "<link", "@import", "url("} {
		if strings.Contains(doc, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if strings.Count(doc, "</script>") != 2 || strings.Count(doc, "</style>") != 1 {
		t.Fatalf("the page has %d script and %d style ends", strings.Count(doc, "</script>"), strings.Count(doc, "</style>"))
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="subarena-data">(.*?)</script>`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("no data element")
	}
	var data struct {
		Schema string
		Trace  string
		Runs   []struct {
			Pieces     [][]json.RawMessage
			Violations []any
		}
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatal(err)
	}
	if data.Schema != Schema || data.Trace != "tiny </script><b>" || len(data.Runs) != 1 || len(data.Runs[0].Pieces) != 2 ||
		data.Runs[0].Violations == nil {
		t.Fatalf("data %+v", data)
	}
	want := []string{"0", "256", "512", "3", "5", "1", "-1", "-1", "[1,0,1]"}
	for i, f := range data.Runs[0].Pieces[1] {
		if string(f) != want[i] {
			t.Fatalf("pending piece field %d is %s, want %s", i, f, want[i])
		}
	}
	if !strings.Contains(doc, "<title>memory timeline: tiny &lt;/script&gt;&lt;b&gt;</title>") {
		t.Error("the title is not escaped")
	}
}

// TestAssetsInline: no embedded file can end the element it is inlined in, and each
// script file is in the page.
func TestAssetsInline(t *testing.T) {
	for _, name := range append([]string{"assets/viewer.css"}, scriptFiles...) {
		data, err := assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		low := bytes.ToLower(data)
		if bytes.Contains(low, []byte("</script")) || bytes.Contains(low, []byte("</style")) {
			t.Errorf("%s contains a closing script or style tag", name)
		}
	}
	js, err := script()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"window.subarenaViewer", "function pieceHTML", "Panel.prototype.draw"} {
		if !strings.Contains(js, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
}

// TestValidate: each kind of inconsistency is refused with ErrPage, and Write writes
// nothing then.
func TestValidate(t *testing.T) {
	for name, spoil := range map[string]func(p *Page){
		"no runs":           func(p *Page) { p.Runs = nil },
		"schema":            func(p *Page) { p.Schema = "other/v9" },
		"kind":              func(p *Page) { p.Runs[0].Kind = "guess" },
		"high-water marks":  func(p *Page) { p.Runs[0].HighWater = p.Runs[0].HighWater[:4] },
		"piece buffer":      func(p *Page) { p.Runs[0].Pieces[0].Buffer = 1 },
		"piece beyond HWM":  func(p *Page) { p.Runs[0].Pieces[0].Hi = 1024 },
		"piece steps":       func(p *Page) { p.Runs[0].Pieces[1].To = 6 },
		"empty piece":       func(p *Page) { p.Runs[0].Pieces[1].Lo = 512 },
		"use op":            func(p *Page) { p.Runs[0].Pieces[1].Users[0].Op = 2 },
		"use access":        func(p *Page) { p.Runs[0].Pieces[1].Users[0].Access = "peek" },
		"holder":            func(p *Page) { p.Runs[0].Pieces[0].Holder = 1 },
		"view parent":       func(p *Page) { p.Views[0].Parent = 0 },
		"op engine":         func(p *Page) { p.Ops[1].Engine = 2 },
		"negative steps":    func(p *Page) { p.Steps = -1 },
		"host out of range": func(p *Page) { p.Runs[0].Pieces[0].Host = 3 },
	} {
		p := tiny()
		spoil(p)
		var b bytes.Buffer
		err := Write(&b, p)
		if !errors.Is(err, ErrPage) || b.Len() != 0 {
			t.Errorf("%s: Write = %v after %d bytes", name, err, b.Len())
		}
	}
	if err := tiny().Validate(); err != nil {
		t.Fatal(err)
	}
}
