package check

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

func checkOffsets(t *testing.T, p *trace.Program, offsets map[string]int64) *Report {
	t.Helper()
	plan := &trace.Plan{Trace: p.Trace.Name, Offsets: offsets}
	for n, off := range offsets {
		r, _ := p.Lookup(n)
		plan.Size = max(plan.Size, off+p.Buffers[r.Buffer].Size)
	}
	rep, err := Plan(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

const inplaceDoc = `{"format": "subarena-trace/v1", "engines": ["c"], "steps": [
	{"alloc": "a", "size": 64, "shape": [4, 4], "elem": 4},
	{"op": "fill", "writes": ["a"]},
	{"alloc": "b", "size": 64, "shape": [16], "elem": 4},
	{"view": "at", "of": "a", "shape": [4, 4], "strides": [4, 16], "elem": 4},
	{"op": "scale", "reads": ["READ"], "writes": ["b"], "inplace": INPLACE},
	{"release": "a"},
	{"op": "use", "reads": ["b"]},
	{"release": "b"}]}`

// TestCheckInplace: an inplace op may write b over a when its read and write views put
// element i over element i; a transposed read, a shifted placement or a non-inplace op
// may not.
func TestCheckInplace(t *testing.T) {
	doc := func(read, inplace string) *trace.Program {
		return parseProgram(t, strings.NewReplacer("READ", read, "INPLACE", inplace).Replace(inplaceDoc))
	}
	if rep := checkOffsets(t, doc("a", "true"), map[string]int64{"a": 0, "b": 0}); !rep.Safe {
		t.Fatalf("in place element for element rejected: %s", rep.Violations[0].String())
	}
	cases := []struct {
		name, read, inplace string
		offB                int64
	}{
		{"transposed read", "at", "true", 0},
		{"not inplace", "a", "false", 0},
		{"shifted", "a", "true", 4},
	}
	for _, c := range cases {
		rep := checkOffsets(t, doc(c.read, c.inplace), map[string]int64{"a": 0, "b": c.offB})
		if len(rep.Violations) != 1 {
			t.Fatalf("%s: %+v", c.name, rep.Violations)
		}
		v := rep.Violations[0]
		if v.Rule != ViolationSameOp || v.Earlier.Op != "scale" || v.Later.Op != "scale" || v.Earlier.Chain[0] != c.read {
			t.Fatalf("%s: %s", c.name, v.String())
		}
		if v.Bytes != 64-c.offB {
			t.Fatalf("%s: %d bytes", c.name, v.Bytes)
		}
	}
}

// TestCheckHeldAndDiscard: bytes both buffers hold at the end cannot be shared; a
// discarded view's bytes are let go at the discard, before the buffer's release.
func TestCheckHeldAndDiscard(t *testing.T) {
	p := parseProgram(t, `{"format": "subarena-trace/v1", "engines": ["c", "d"], "steps": [
		{"alloc": "x", "size": 32},
		{"alloc": "y", "size": 32},
		{"op": "wx", "writes": ["x"]},
		{"op": "wy", "engine": "d", "writes": ["y"]}]}`)
	rep := checkOffsets(t, p, map[string]int64{"x": 0, "y": 16})
	if len(rep.Violations) != 1 || rep.Violations[0].Rule != ViolationHeld || rep.Violations[0].Bytes != 16 ||
		rep.Violations[0].Earlier.Buffer != "x" {
		t.Fatalf("%+v", rep.Violations)
	}
	p = parseProgram(t, `{"format": "subarena-trace/v1", "engines": ["c"], "steps": [
		{"alloc": "gu", "size": 64},
		{"op": "mm", "writes": ["gu"]},
		{"view": "gate", "of": "gu", "offset": 0, "shape": [32], "strides": [1], "elem": 1},
		{"view": "up", "of": "gu", "offset": 32, "shape": [32], "strides": [1], "elem": 1},
		{"op": "silu", "reads": ["gate"]},
		{"release": "gate"},
		{"alloc": "h", "size": 32},
		{"op": "mul", "reads": ["up"], "writes": ["h"]},
		{"release": "h"},
		{"op": "late", "reads": ["up"]},
		{"release": "gu"}]}`)
	if rep := checkOffsets(t, p, map[string]int64{"gu": 0, "h": 0}); !rep.Safe {
		t.Fatalf("h over the discarded gate half: %v", rep.Violations[0].String())
	}
	// Over [16, 48): the gate quarter is discarded before h exists (fine); on the up
	// quarter h lets go first (released before gu), so mul's write must precede every use
	// through gu: mm (earlier) is a missing edge, mul's own read of up is the same op not
	// in place, and late (after mul on the same engine) is fine.
	rep = checkOffsets(t, p, map[string]int64{"gu": 0, "h": 16})
	got := map[string]string{}
	for _, v := range rep.Violations {
		if v.Earlier.Buffer != "h" || v.Ranges[0] != (ranges.Range{Lo: 32, Hi: 48}) {
			t.Fatalf("unexpected %s", v.String())
		}
		got[v.Later.Op] = v.Rule
	}
	if len(got) != 2 || got["mm"] != ViolationUnordered || got["mul"] != ViolationSameOp {
		t.Fatalf("violations by later op: %v", got)
	}
}

func TestCheckPlanErrors(t *testing.T) {
	p := tracetest.Program(t, "../testdata/split-qkv.json")
	cases := map[string]*trace.Plan{
		"missing":  {Size: 1 << 20, Offsets: map[string]int64{"qkv": 0}},
		"negative": {Size: 1 << 20, Offsets: map[string]int64{"qkv": 0, "tmp": -256}},
		"beyond":   {Size: 24576, Offsets: map[string]int64{"qkv": 0, "tmp": 24576}},
		"unknown":  {Size: 1 << 20, Offsets: map[string]int64{"qkv": 0, "tmp": 0, "zzz": 0}},
		"view":     {Size: 1 << 20, Offsets: map[string]int64{"qkv": 0, "tmp": 0, "q": 0}},
		"overflow": {Size: 1 << 62, Offsets: map[string]int64{"qkv": 0, "tmp": 1<<63 - 100}},
	}
	for name, plan := range cases {
		if _, err := Plan(p, plan); !errors.Is(err, trace.ErrPlan) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestFinishReport: a report lists each violation's byte runs merged, in order and cut
// to maxReportedRuns, orders violations by first byte, then Earlier op, then Later op,
// keeping the given order among equals, and is safe exactly when it lists none.
func TestFinishReport(t *testing.T) {
	rs := func(pairs ...int64) []ranges.Range {
		var out []ranges.Range
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, ranges.Range{Lo: pairs[i], Hi: pairs[i+1]})
		}
		return out
	}
	var many []int64
	for i := range int64(maxReportedRuns + 2) {
		many = append(many, 2*i, 2*i+1)
	}
	vs := []*Violation{
		{Rule: "merged", Ranges: rs(10, 12, 0, 4, 3, 6), Bytes: 8, Earlier: Party{Op: "b"}, Later: Party{Op: "x"}},
		{Rule: "cut", Ranges: rs(many...), Bytes: maxReportedRuns + 2, Earlier: Party{Op: "a"}, Later: Party{Op: "y"}},
		{Rule: "late", Ranges: rs(20, 30), Bytes: 10, Earlier: Party{Op: "a"}, Later: Party{Op: "z"}},
		{Rule: "first tie", Ranges: rs(0, 1), Bytes: 1, Earlier: Party{Op: "a"}, Later: Party{Op: "c"}},
		{Rule: "second tie", Ranges: rs(0, 2), Bytes: 2, Earlier: Party{Op: "a"}, Later: Party{Op: "c"}},
	}
	rep := &Report{Trace: "t"}
	finishReport(rep, vs)
	if rep.Safe {
		t.Fatal("a report with violations is safe")
	}
	want := []struct {
		rule   string
		ranges []ranges.Range
		bytes  int64
	}{
		{"first tie", rs(0, 1), 1},
		{"second tie", rs(0, 2), 2},
		{"cut", rs(many[:2*maxReportedRuns]...), maxReportedRuns + 2},
		{"merged", rs(0, 6, 10, 12), 8},
		{"late", rs(20, 30), 10},
	}
	if len(rep.Violations) != len(want) {
		t.Fatalf("%d violations, want %d", len(rep.Violations), len(want))
	}
	for i, w := range want {
		v := rep.Violations[i]
		if v.Rule != w.rule || !slices.Equal(v.Ranges, w.ranges) || v.Bytes != w.bytes {
			t.Errorf("violation %d: %s %v (%d B), want %s %v (%d B)", i, v.Rule, v.Ranges, v.Bytes, w.rule, w.ranges, w.bytes)
		}
	}

	empty := &Report{Trace: "t"}
	finishReport(empty, nil)
	if !empty.Safe || len(empty.Violations) != 0 {
		t.Fatalf("report without violations: safe %v, %d violations", empty.Safe, len(empty.Violations))
	}
}
