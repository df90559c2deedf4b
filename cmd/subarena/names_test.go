package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestControlCharactersInNames: names carrying NUL, ESC sequences (retitle the window,
// clear the screen), BEL and bidirectional overrides reach neither the terminal nor the
// pictures raw. Reports print them escaped (\x1b), the SVG stays well-formed XML, and the
// HTML page's title is escaped.
func TestControlCharactersInNames(t *testing.T) {
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	doc := string(data)
	for old, new := range map[string]string{
		`"split-qkv"`: `"split\u001b]0;pwned\u0007"`,
		`"qkv"`:       `"qkv\u0000\u001b[2J"`,
		`"v"`:         `"v\u202e\u0085"`,
		`"offload_v"`: `"offload\u001b[31m"`,
		`"copy"`:      `"copy\u0007"`,
	} {
		doc = strings.ReplaceAll(doc, old, new)
	}
	dir := t.TempDir()
	path := writeTemp(t, dir, "names.json", doc)
	svg, html := filepath.Join(dir, "t.svg"), filepath.Join(dir, "t.html")
	for _, args := range [][]string{
		{"replay", path},
		{"check", path, "--policy", "ir-order"},
		{"plan", path, "--budget", "0"},
		{"import", path, "-o", filepath.Join(dir, "x.json")},
		{"viz", path, "-o", svg},
		{"viz", path, "--html", "-o", html},
		{"viz", path, "--plan", writeTemp(t, dir, "unsafe.json", irOrderPlan(t, path)), "-o", svg},
	} {
		r := runClean(t, args...)
		require.Contains(t, []int{0, 1}, r.code, "%v: %s", args, r.stderr)
		for _, out := range []string{r.stdout, r.stderr} {
			require.NotContains(t, out, "\x1b", "%v", args)
			require.NotContains(t, out, "\x00", "%v", args)
			require.NotContains(t, out, "\x07", "%v", args)
			require.NotContains(t, out, "\u202e", "%v", args)
		}
		if args[0] == "check" {
			require.Contains(t, r.stdout, `UNSAFE: split\x1b]0;pwned\x07: 1 violations`)
			require.Contains(t, r.stdout, `v\u202e\u0085 -> qkv\x00\x1b[2J`)
			require.Contains(t, r.stdout, `offload\x1b[31m -> use_tmp`)
		}
		if args[0] == "replay" {
			require.Contains(t, r.stdout, `trace         split\x1b]0;pwned\x07`+"\n")
		}
		if args[0] == "viz" {
			wellFormed(t, svg)
		}
	}
	// A scenario script is printed back: one carrying a control character is refused.
	script := writeTemp(t, dir, "esc.txt", "new engines=compute granule=64 capacity=4096\n----\n\nalloc b\x1b[2J 1024 compute\n----\n\n")
	r := runClean(t, "scenario", script)
	require.Equal(t, 2, r.code)
	require.NotContains(t, r.stdout+r.stderr, "\x1b")
	require.Contains(t, errLine(t, r), script+`:4: control character "\x1b" in the text`)

	page, err := os.ReadFile(html)
	require.NoError(t, err)
	require.Contains(t, string(page), `<title>memory timeline: split\x1b]0;pwned\x07 under subrange-fenced</title>`)
}

// irOrderPlan returns the plan replay makes of the trace at path under ir-order, which
// check finds unsafe.
func irOrderPlan(t *testing.T, path string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "p.json")
	r := runClean(t, "replay", path, "--policy", "ir-order", "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return string(data)
}

// wellFormed checks that the file at path is well-formed XML without raw control
// characters.
func wellFormed(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := xml.NewDecoder(f)
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s is not well-formed XML", path)
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, c := range data {
		require.False(t, c < 0x20 && c != '\n' && c != '\t' && c != '\r', "%s: raw control byte %#x", path, c)
	}
}
