package check

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// The gate/up fixture is package trace's (testdata/gate-up.json.tmpl), where the
// format's side of placements is tested.

// gateUpDoc is a fused gate/up product split into column halves by strided views: silu
// runs in place over the gate half, mul multiplies silu by the up half.
var gateUpDoc = testutil.Text("../testdata/gate-up.json.tmpl")

func gateUp(t *testing.T, releases string) *trace.Program {
	t.Helper()
	return parseProgram(t, strings.Replace(gateUpDoc, "RELEASES", releases, 1))
}

// gateUpPlan places gu at 0, act at 64 and lays silu over gu's gate half (shifted by
// shift bytes).
func gateUpPlan(shift int64) *trace.Plan {
	return &trace.Plan{Trace: "gate-up", Size: 96, Offsets: map[string]int64{"gu": 0, "act": 64},
		Placements: map[string]trace.Placement{"silu": {Of: "gu", Offset: shift, Shape: []int64{2, 4},
			Strides: []int64{32, 4}, Elem: 4}}}
}

func mustCheck(t *testing.T, p *trace.Program, plan *trace.Plan) *Report {
	t.Helper()
	rep, err := Plan(p, plan)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestCheckPlacementGateUp: silu laid over the gate half is safe whatever order the host
// releases gu and silu in; shifted onto the live up half, or over bytes gu holds to the
// end, it is not.
func TestCheckPlacementGateUp(t *testing.T) {
	for _, rel := range []string{`{"release": "gu"}, {"release": "silu"}`, `{"release": "silu"}, {"release": "gu"}`} {
		p := gateUp(t, rel)
		if rep := mustCheck(t, p, gateUpPlan(0)); !rep.Safe || rep.Pairs != 1 {
			t.Fatalf("%s: placement over the gate half: %+v", rel, rep)
		}
		// Without the placement, silu needs bytes of its own: at 64 it overlaps act.
		plain := &trace.Plan{Trace: "gate-up", Size: 96, Offsets: map[string]int64{"gu": 0, "silu": 64, "act": 64}}
		if rep := mustCheck(t, p, plain); rep.Safe {
			t.Fatalf("%s: silu and act sharing bytes accepted", rel)
		}
	}
	p := gateUp(t, `{"release": "gu"}, {"release": "silu"}`)
	rep := mustCheck(t, p, gateUpPlan(16))
	if rep.Safe || len(rep.Violations) != 1 {
		t.Fatalf("silu over the up half: %+v", rep)
	}
	v := rep.Violations[0]
	if v.Rule != ViolationUnordered || v.Earlier.Op != "mul" || v.Later.Op != "silu" || v.Bytes != 32 ||
		v.Earlier.Buffer != "gu" || v.Later.Buffer != "silu" || strings.Join(v.Later.Chain, " ") != "silu gu" ||
		strings.Join(v.Earlier.Chain, " ") != "up gu" {
		t.Fatalf("silu over the up half: %s", v.String())
	}
	// gu held to the end: its gate half may not be taken over.
	p = gateUp(t, `{"release": "silu"}`)
	rep = mustCheck(t, p, gateUpPlan(0))
	if rep.Safe {
		t.Fatal("placement over bytes the host holds to the end accepted")
	}
	for _, v := range rep.Violations {
		if v.Rule != ViolationTakenOver || v.Earlier.Buffer != "gu" || v.Later.Buffer != "silu" {
			t.Fatalf("held host: %s", v.String())
		}
	}
	if !strings.Contains(rep.Violations[0].String(), "holds at the end") {
		t.Fatal(rep.Violations[0].String())
	}
	// act, placed over silu's bytes in gu at mul (silu and up die there; the second half
	// of silu is still read by peek): unsafe; over the up half it is fine.
	p = gateUp(t, `{"release": "gu"}, {"release": "silu"}`)
	plan := gateUpPlan(0)
	delete(plan.Offsets, "act")
	plan.Size = 64
	plan.Placements["act"] = trace.Placement{Of: "gu", Offset: 0, Shape: []int64{2, 4}, Strides: []int64{32, 4}, Elem: 4}
	rep = mustCheck(t, p, plan)
	if rep.Safe {
		t.Fatal("act over silu's bytes, still read by peek, accepted")
	}
	var seen bool
	for _, v := range rep.Violations {
		seen = seen || (v.Rule == ViolationUnordered && v.Earlier.Op == "peek" && v.Later.Op == "mul" && v.Later.Buffer == "act")
	}
	if !seen {
		t.Fatalf("peek -> mul not reported: %+v", rep.Violations)
	}
	// Over [16, 48), a dense footprint, act meets silu's second row and the up half.
	plan.Placements["act"] = trace.Placement{Of: "gu", Offset: 16, Shape: []int64{8}, Strides: []int64{4}, Elem: 4}
	if rep := mustCheck(t, p, plan); rep.Safe {
		t.Fatal("act over [16, 48) accepted")
	}
	plan.Placements["act"] = trace.Placement{Of: "gu", Offset: 16, Shape: []int64{2, 4}, Strides: []int64{32, 4}, Elem: 4}
	if rep := mustCheck(t, p, plan); !rep.Safe || rep.Pairs != 2 {
		t.Fatalf("act over the up half: %+v", rep)
	}
}

// TestViewPlacements: the rewrite makes silu a view of gu, re-expresses silu_row1 over the
// gate half, releases gu once with the last of its group, and the offsets alone check
// clean on it.
func TestViewPlacements(t *testing.T) {
	p := gateUp(t, `{"release": "silu"}, {"release": "gu"}, {"op": "late", "reads": ["w"]}`)
	t2, flat, err := trace.ViewPlacements(p, gateUpPlan(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(flat.Placements) != 0 || len(flat.Offsets) != 2 {
		t.Fatalf("flat plan %+v", flat)
	}
	p2 := tracetest.Resolve(t, t2)
	row, _ := p2.Lookup("silu_row1")
	if l := p2.Layout(row); row.Buffer != 1 || l.Offset != 32 || l.Strides[0] != 4 {
		t.Fatalf("silu_row1 in the rewrite: %v", l)
	}
	gu, _ := p2.Lookup("gu")
	if rel := p2.Buffers[gu.Buffer].Release; t2.Steps[rel].Name != "gu" || rel != len(t2.Steps)-4 {
		t.Fatalf("gu released at step %d", rel)
	}
	if rep := mustCheck(t, p2, flat); !rep.Safe {
		t.Fatalf("rewrite: %s", rep.Violations[0].String())
	}
	if tr, f, err := trace.ViewPlacements(p, &trace.Plan{Trace: "x", Size: 96, Offsets: map[string]int64{"gu": 0, "silu": 64, "act": 64}}); err != nil || tr != p.Trace || len(f.Offsets) != 3 {
		t.Fatalf("no placements: %v", err)
	}
	if _, _, err := trace.ViewPlacements(p, gateUpPlan(20)); !errors.Is(err, trace.ErrOutOfBounds) {
		t.Fatalf("bad placement: %v", err)
	}
}

// TestCheckPlanPlacementsBad: every way a placement can fail to fit the trace is an
// error matching ErrPlan, ErrPlacement and its own sentinel.
func TestCheckPlanPlacementsBad(t *testing.T) {
	p := gateUp(t, `{"view": "act_mid", "of": "act", "offset": 8, "shape": [4], "strides": [4], "elem": 4},
		{"release": "gu"}, {"release": "silu"}, {"alloc": "late", "size": 64}, {"op": "fill", "writes": ["late"]}, {"release": "late"}`)
	good := trace.Placement{Of: "gu", Offset: 0, Shape: []int64{2, 4}, Strides: []int64{32, 4}, Elem: 4}
	with := func(edit func(pl *trace.Plan)) *trace.Plan {
		plan := gateUpPlan(0)
		plan.Offsets["late"] = 0
		edit(plan)
		return plan
	}
	set := func(name string, pl trace.Placement) func(*trace.Plan) {
		return func(plan *trace.Plan) { plan.Placements[name] = pl }
	}
	alter := func(f func(pl *trace.Placement)) func(*trace.Plan) {
		pl := good
		pl.Shape, pl.Strides = []int64{2, 4}, []int64{32, 4}
		f(&pl)
		return set("silu", pl)
	}
	cases := []struct {
		name string
		edit func(*trace.Plan)
		want error
	}{
		{"unknown buffer", set("nope", good), trace.ErrUnknownName},
		{"a view", set("gate", good), trace.ErrUnknownName},
		{"external buffer", set("w", good), trace.ErrExternal},
		{"offset and placement", set("act", good), trace.ErrDuplicateName},
		{"unknown host", alter(func(pl *trace.Placement) { pl.Of = "nope" }), trace.ErrUnknownName},
		{"host a view", alter(func(pl *trace.Placement) { pl.Of = "up" }), trace.ErrUnknownName},
		{"external host", alter(func(pl *trace.Placement) { pl.Of = "w" }), trace.ErrUnplacedHost},
		{"host placed itself", func(plan *trace.Plan) {
			delete(plan.Offsets, "act")
			plan.Placements["act"] = trace.Placement{Of: "silu", Shape: []int64{8}, Strides: []int64{4}, Elem: 4}
		}, trace.ErrUnplacedHost},
		{"placed over itself", alter(func(pl *trace.Placement) { pl.Of = "silu" }), trace.ErrUnplacedHost},
		{"host allocated later", alter(func(pl *trace.Placement) { pl.Of = "late" }), trace.ErrInexpressible},
		{"outside the host", alter(func(pl *trace.Placement) { pl.Offset = 20 }), trace.ErrOutOfBounds},
		{"negative offset", alter(func(pl *trace.Placement) { pl.Offset = -4 }), trace.ErrOutOfBounds},
		{"elem mismatch", alter(func(pl *trace.Placement) { pl.Elem, pl.Strides = 2, []int64{32, 2} }), trace.ErrInvalidElem},
		{"elem zero", alter(func(pl *trace.Placement) { pl.Elem = 0 }), trace.ErrInvalidElem},
		{"too few elements", alter(func(pl *trace.Placement) { pl.Shape = []int64{2, 3} }), trace.ErrShape},
		{"too many elements", alter(func(pl *trace.Placement) { pl.Shape = []int64{2, 5} }), trace.ErrShape},
		{"shape/strides length", alter(func(pl *trace.Placement) { pl.Strides = []int64{4} }), trace.ErrShape},
		{"negative dimension", alter(func(pl *trace.Placement) { pl.Shape = []int64{-2, -4} }), trace.ErrShape},
		{"zero stride", alter(func(pl *trace.Placement) { pl.Strides = []int64{0, 4} }), trace.ErrOverlappingFootprint},
		{"overlapping elements", alter(func(pl *trace.Placement) { pl.Strides = []int64{8, 4} }), trace.ErrOverlappingFootprint},
		{"partly overlapping", alter(func(pl *trace.Placement) { pl.Strides = []int64{32, 2} }), trace.ErrOverlappingFootprint},
		{"overflow", alter(func(pl *trace.Placement) { pl.Strides = []int64{1 << 62, 4}; pl.Shape = []int64{4, 2} }), trace.ErrOverflow},
		// A transposed footprint cannot take silu's [2, 4] shape without a copy.
		{"shape not reshapeable", alter(func(pl *trace.Placement) { pl.Shape, pl.Strides = []int64{4, 2}, []int64{4, 32} }), trace.ErrInexpressible},
		// act_mid walks act's elements 2..5, from its first row into its second: over
		// a strided footprint that walk tears apart.
		{"view not expressible", func(plan *trace.Plan) {
			delete(plan.Offsets, "act")
			plan.Placements["act"] = trace.Placement{Of: "gu", Offset: 16, Shape: []int64{2, 4}, Strides: []int64{32, 4}, Elem: 4}
		}, trace.ErrInexpressible},
	}
	for _, c := range cases {
		plan := with(c.edit)
		err := trace.CheckPlan(p, plan)
		if !errors.Is(err, c.want) || !errors.Is(err, trace.ErrPlan) || !errors.Is(err, trace.ErrPlacement) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if _, err2 := Plan(p, plan); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%s: Check says %v, CheckPlan %v", c.name, err2, err)
		}
	}
	// The good placement of this trace, and a reshaped but equivalent one, fit.
	if err := trace.CheckPlan(p, with(func(*trace.Plan) {})); err != nil {
		t.Fatal(err)
	}
	ok := with(set("silu", trace.Placement{Of: "gu", Offset: 0, Shape: []int64{2, 1, 4}, Strides: []int64{32, 0, 4}, Elem: 4}))
	if rep, err := Plan(p, ok); err != nil || !rep.Safe {
		t.Fatalf("reshaped footprint: %v %+v", err, rep)
	}
}

// FuzzCheckPlan reads arbitrary plan documents against the gate/up trace: ParsePlan and
// Plan never panic, a plan that does not fit is an ErrPlan error, and a parsed plan
// survives write → parse.
func FuzzCheckPlan(f *testing.F) {
	var buf bytes.Buffer
	_ = trace.WritePlan(&buf, gateUpPlan(0))
	f.Add(buf.Bytes())
	buf.Reset()
	_ = trace.WritePlan(&buf, gateUpPlan(16))
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format": "subarena-plan/v1", "trace": "t", "size": 96, "offsets": {"gu": 0, "act": 64},
		"placements": {"silu": {"of": "gu", "offset": 0, "shape": [2, 1, 4], "strides": [32, 0, 4], "elem": 4}}}`))
	tr, err := trace.Parse([]byte(strings.Replace(gateUpDoc, "RELEASES", `{"release": "gu"}, {"release": "silu"}`, 1)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, err := trace.ParsePlan(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := trace.WritePlan(&out, plan); err != nil {
			t.Fatal(err)
		}
		back, err := trace.ParsePlan(out.Bytes())
		if err != nil || (!back.Equal(plan) && plan.Ms == plan.Ms) {
			t.Fatalf("round trip: %v\n%s", err, out.Bytes())
		}
		p, err := tr.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Plan(p, plan)
		if err != nil {
			if !errors.Is(err, trace.ErrPlan) {
				t.Fatalf("check: %v", err)
			}
			return
		}
		if rep.Safe != (len(rep.Violations) == 0) {
			t.Fatalf("report %+v", rep)
		}
	})
}
