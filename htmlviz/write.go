package htmlviz

import (
	"bufio"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/subarena/subarena/internal/checked"
)

// The viewer's script, in the order it runs, and its style sheet: files of this
// package, embedded at build time.
//
//go:embed assets/model.js assets/draw.js assets/ui.js assets/viewer.css
var assets embed.FS

var scriptFiles = []string{"assets/model.js", "assets/draw.js", "assets/ui.js"}

// script is the viewer's JavaScript: the files concatenated inside one function scope.
func script() (string, error) {
	var b strings.Builder
	b.WriteString("(function () {\n'use strict';\n")
	for _, name := range scriptFiles {
		data, err := assets.ReadFile(name)
		if err != nil {
			return "", err
		}
		b.Write(data)
		b.WriteString("\n")
	}
	b.WriteString("})();\n")
	return b.String(), nil
}

// Write renders page as one self-contained HTML document: the viewer's script and
// style inline, the page's data as the JSON document the package doc describes, and no
// reference to anything outside the file. A page that fails Validate is not written;
// the error matches ErrPage.
func Write(w io.Writer, page *Page) error {
	if err := page.Validate(); err != nil {
		return err
	}
	doc := *page
	doc.Schema = Schema
	// Empty slices, not null, so the script needs no checks.
	if doc.Engines == nil {
		doc.Engines = []string{}
	}
	if doc.Buffers == nil {
		doc.Buffers = []Buffer{}
	}
	if doc.Views == nil {
		doc.Views = []View{}
	}
	if doc.Ops == nil {
		doc.Ops = []Op{}
	}
	doc.Runs = append([]Run(nil), page.Runs...)
	for i := range doc.Runs {
		if doc.Runs[i].Pieces == nil {
			doc.Runs[i].Pieces = []Piece{}
		}
		if doc.Runs[i].Violations == nil {
			doc.Runs[i].Violations = []Violation{}
		}
	}
	// encoding/json escapes <, > and &, so the data cannot close its script element.
	data, err := json.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("htmlviz: encoding the page: %w", err)
	}
	js, err := script()
	if err != nil {
		return err
	}
	css, err := assets.ReadFile("assets/viewer.css")
	if err != nil {
		return err
	}
	title := page.Title
	if title == "" {
		title = "memory timeline: " + page.Trace
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="subarena htmlviz (%s)">
<title>%s</title>
<style>
%s</style>
</head>
<body>
<header>
<h1>%s</h1>
<div class="legend"><span><span class="swatch live"></span>live</span><span><span class="swatch pending"></span>let go, users pending</span><span><span class="swatch hwm"></span>high-water mark</span><span><span class="swatch lb"></span>LiveLB</span><span><span class="swatch bad"></span>unsafe reuse</span></div>
<div class="tools"><input id="search" type="search" placeholder="search a buffer…" autocomplete="off" aria-label="search a buffer"><ul id="results" hidden></ul><button id="reset" type="button">reset zoom</button></div>
</header>
<main>
<div id="panels"></div>
<aside id="details"></aside>
</main>
<footer>Wheel: zoom the steps · shift+wheel: zoom the offsets · drag: pan · double-click: reset · click a piece: select its buffer · Esc: clear</footer>
<div id="tooltip" hidden></div>
<script type="application/json" id="subarena-data">`, Schema, checked.XML(title), css, checked.XML(title))
	bw.Write(data)
	fmt.Fprintf(bw, "</script>\n<script>\n%s</script>\n</body>\n</html>\n", js)
	return bw.Flush()
}
