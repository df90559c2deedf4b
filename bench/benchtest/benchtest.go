// Package benchtest sets up the runs that the tests of bench, bench/analysis,
// cmd/subarena and the browser integration look at: a resolved program from a
// trace file, a trace or a generator, a replay and the check of its plan, and
// the structure of an SVG picture. Every function fails the test (tb.Fatal) on
// an error instead of returning it. It lives beside bench, above the trace
// packages it drives, so that no package under internal/ imports upward.
package benchtest

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"

	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
	"github.com/subarena/subarena/trace/tracefile"
)

// Program loads and resolves the trace file at path (any format tracefile
// reads).
func Program(tb testing.TB, path string) *trace.Program {
	tb.Helper()
	p, err := tracefile.LoadProgram(path)
	return must(tb, p, err)
}

// Resolve resolves tr.
func Resolve(tb testing.TB, tr *trace.Trace) *trace.Program {
	tb.Helper()
	p, err := tr.Resolve()
	return must(tb, p, err)
}

// Build generates a trace with build (a bench.Workload's Build, say) and
// resolves it.
func Build(tb testing.TB, build func() (*trace.Trace, error)) *trace.Program {
	tb.Helper()
	tr, err := build()
	return Resolve(tb, must(tb, tr, err))
}

// Replay replays p with opts.
func Replay(tb testing.TB, p *trace.Program, opts replay.Options) *replay.Result {
	tb.Helper()
	res, err := replay.Run(p, opts)
	return must(tb, res, err)
}

// CheckedReplay replays p with opts and checks the plan the replay made; an
// unsafe plan is reported, not a failure.
func CheckedReplay(tb testing.TB, p *trace.Program, opts replay.Options) (*replay.Result, *check.Report) {
	tb.Helper()
	res := Replay(tb, p, opts)
	rep, err := check.Plan(p, res.Plan)
	return res, must(tb, rep, err)
}

// must returns v, or fails tb with err when err is not nil.
func must[T any](tb testing.TB, v T, err error) T {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// SVG reads data as XML, fails unless it is well-formed to its end with an
// <svg> root element, and returns how many elements it has.
func SVG(tb testing.TB, data []byte) int {
	tb.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	root, elems := "", 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			elems++
		}
	}
	if root != "svg" {
		tb.Fatalf("SVG root element %q", root)
	}
	return elems
}
