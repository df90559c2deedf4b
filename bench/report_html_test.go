package bench

import (
	"bytes"
	"html"
	"math"
	"strings"
	"testing"
)

// TestWriteHTML: the report holds the table line for line as WriteTable prints it, the
// unsafe row marked, and each picture without its XML declaration; a picture that is
// not SVG is refused.
func TestWriteHTML(t *testing.T) {
	m := &Matrix{Quick: true, Workloads: []WorkloadInfo{{Name: "w<1>", Summary: "a & b", Steps: 3, Buffers: 2, Ops: 1}},
		Cells: []Cell{
			{Workload: "w<1>", Policy: "subrange-fenced", Fit: "lean", HWM: 3 << 20, LiveLB: 2 << 20, Overhead: 0.5,
				Fragmentation: math.NaN(), PendingPeak: 1536, AllocsPerSec: 1500, Safe: true},
			{Workload: "w<1>", Policy: "ir-order", Fit: FitFirstFit, HWM: 1024, LiveLB: 2048, Overhead: -0.5, Checked: true,
				Violations: 3},
		}}
	svg := []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg"><text>x &lt; y</text></svg>`)
	var b bytes.Buffer
	if err := m.WriteHTML(&b, Picture{Caption: "peak & frag", SVG: svg}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	var table strings.Builder
	if err := m.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(table.String(), "\n"), "\n")
	for _, want := range []string{"a &amp; b", "(quick settings)", "peak &amp; frag",
		`<svg xmlns="http://www.w3.org/2000/svg"><text>x &lt; y</text></svg>`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the report lacks %q:\n%s", want, doc)
		}
	}
	// The table, its text unescaped, line for line.
	plain := html.UnescapeString(doc)
	for _, want := range []string{`<span class="head">` + lines[0] + "</span>\n" + lines[1] + "\n",
		`<span class="unsafe">` + lines[2] + "</span>"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the report lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(doc, "<?xml") || !strings.Contains(lines[2], "UNSAFE: 3 violations") {
		t.Errorf("the report has the XML declaration, or the table lacks the violations:\n%s", table.String())
	}
	if err := m.WriteHTML(&b, Picture{Caption: "png", SVG: []byte("\x89PNG")}); err == nil {
		t.Error("a picture that is not SVG was accepted")
	}
}
