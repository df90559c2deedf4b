package bench

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// Picture is an SVG document to show in an HTML report, under a caption.
type Picture struct {
	Caption string
	SVG     []byte
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>subarena bench</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; color: #222; margin: 20px 28px; }
h1 { font-size: 20px; }
pre.table { font: 12.5px/1.45 ui-monospace, Menlo, Consolas, monospace; background: #f8f8f8; border: 1px solid #ddd;
  padding: 10px 14px; overflow-x: auto; }
pre.table .head { font-weight: 700; }
pre.table .unsafe { color: #b00000; font-weight: 700; }
figure { margin: 18px 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #555; margin-bottom: 6px; }
ul { color: #444; }
</style>
</head>
<body>
<h1>subarena bench{{if .Quick}} (quick settings){{end}}</h1>
<ul>{{range .Workloads}}<li><b>{{.Name}}</b>: {{.Summary}} ({{.Steps}} steps, {{.Buffers}} buffers, {{.Ops}} ops)</li>
{{end}}</ul>
<pre class="table">{{range $i, $l := .Lines}}{{if eq $i 0}}<span class="head">{{$l}}</span>{{else if call $.Unsafe $l}}<span class="unsafe">{{$l}}</span>{{else}}{{$l}}{{end}}
{{end}}</pre>
{{range .Pictures}}<figure><figcaption>{{.Caption}}</figcaption>
{{.SVG}}
</figure>
{{end}}</body>
</html>
`))

// WriteHTML writes the matrix as one self-contained HTML report: the workloads, the
// table exactly as WriteTable prints it (unsafe rows in red), and each picture inline
// under its caption. Pictures must be SVG documents such as WritePeakSVG and WriteSVG
// write; anything before the <svg element (the XML declaration) is left out.
func (m *Matrix) WriteHTML(w io.Writer, pictures ...Picture) error {
	type figure struct {
		Caption string
		SVG     template.HTML
	}
	var table strings.Builder
	if err := m.WriteTable(&table); err != nil {
		return err
	}
	data := struct {
		Quick     bool
		Workloads []WorkloadInfo
		Lines     []string
		Unsafe    func(string) bool
		Pictures  []figure
	}{Quick: m.Quick, Workloads: m.Workloads, Lines: strings.Split(strings.TrimRight(table.String(), "\n"), "\n"),
		Unsafe: func(line string) bool { return strings.Contains(line, "UNSAFE") }}
	for _, p := range pictures {
		i := bytes.Index(p.SVG, []byte("<svg"))
		if i < 0 {
			return fmt.Errorf("bench: picture %q is not an SVG document", p.Caption)
		}
		// The pictures come from this package's own writers, which escape every text.
		data.Pictures = append(data.Pictures, figure{Caption: p.Caption, SVG: template.HTML(p.SVG[i:])})
	}
	return reportTemplate.Execute(w, data)
}
