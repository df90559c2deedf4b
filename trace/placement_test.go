package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// gateUpDoc is a fused gate/up product split into column halves by strided views: silu
// runs in place over the gate half, mul multiplies silu by the up half.
var gateUpDoc = readTestdata("testdata/gate-up.json.tmpl")

// readTestdata returns the contents of a test file; RELEASES in gate-up.json.tmpl
// stands for the release steps a test chooses.
func readTestdata(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func gateUp(t *testing.T, releases string) *Program {
	t.Helper()
	return parseProgram(t, strings.Replace(gateUpDoc, "RELEASES", releases, 1))
}

// gateUpPlan places gu at 0, act at 64 and lays silu over gu's gate half (shifted by
// shift bytes).
func gateUpPlan(shift int64) *Plan {
	return &Plan{Trace: "gate-up", Size: 96, Offsets: map[string]int64{"gu": 0, "act": 64},
		Placements: map[string]Placement{"silu": {Of: "gu", Offset: shift, Shape: []int64{2, 4},
			Strides: []int64{32, 4}, Elem: 4}}}
}

// TestPlanPlacementsRoundTrip: placements survive write → parse exactly, and the
// document carries them under the format's keys.
func TestPlanPlacementsRoundTrip(t *testing.T) {
	plan := gateUpPlan(0)
	plan.Policy, plan.LowerBound, plan.Ms = "plan", 96, 1.5
	plan.Placements["scalar"] = Placement{Of: "gu", Offset: 8, Shape: []int64{}, Strides: []int64{}, Elem: 4}
	var buf bytes.Buffer
	if err := WritePlan(&buf, plan); err != nil {
		t.Fatal(err)
	}
	back, err := ParsePlan(buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if !back.Equal(plan) {
		t.Fatalf("round trip: %+v, wrote %+v", back, plan)
	}
	var again bytes.Buffer
	if err := WritePlan(&again, back); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("second write differs: %v\n%s\n%s", err, again.Bytes(), buf.Bytes())
	}
	var doc struct {
		Placements map[string]map[string]json.RawMessage `json:"placements"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Placements["silu"]
	if len(got) != 5 || string(got["of"]) != `"gu"` || string(got["strides"]) != "[32,4]" && string(got["strides"]) != "[32, 4]" {
		t.Fatalf("placement object %v", got)
	}
	js, err := json.Marshal(plan.Placements["scalar"])
	if err != nil || !strings.Contains(string(js), `"shape":[]`) {
		t.Fatalf("Placement.MarshalJSON: %s %v", js, err)
	}
	// No placements: no key.
	plan.Placements = nil
	buf.Reset()
	_ = WritePlan(&buf, plan)
	if strings.Contains(buf.String(), "placements") {
		t.Fatalf("empty placements written:\n%s", buf.String())
	}
	if plan.Equal(back) || back.Equal(plan) {
		t.Fatal("plans with and without placements compare equal")
	}
}

// TestParsePlacementsBad: a malformed placements key is rejected with the matching
// sentinels, never a panic.
func TestParsePlacementsBad(t *testing.T) {
	const head = `{"format": "subarena-plan/v1", "trace": "t", "size": 96, "offsets": {"gu": 0}, "placements": `
	cases := []struct {
		name, placements string
		want             error
	}{
		{"not an object", `[1]`, ErrSyntax},
		{"entry not an object", `{"silu": 3}`, ErrSyntax},
		{"unknown key", `{"silu": {"of": "gu", "offset": 0, "shape": [8], "strides": [4], "elem": 4, "pad": 1}}`, ErrUnknownKey},
		{"missing of", `{"silu": {"offset": 0, "shape": [8], "strides": [4], "elem": 4}}`, ErrMissingKey},
		{"missing strides", `{"silu": {"of": "gu", "offset": 0, "shape": [8], "elem": 4}}`, ErrMissingKey},
		{"of not a string", `{"silu": {"of": 1, "offset": 0, "shape": [8], "strides": [4], "elem": 4}}`, ErrSyntax},
		{"fractional offset", `{"silu": {"of": "gu", "offset": 0.5, "shape": [8], "strides": [4], "elem": 4}}`, ErrSyntax},
		{"huge elem", `{"silu": {"of": "gu", "offset": 0, "shape": [8], "strides": [4], "elem": 99999999999999999999}}`, ErrOverflow},
		{"null shape", `{"silu": {"of": "gu", "offset": 0, "shape": null, "strides": [4], "elem": 4}}`, ErrSyntax},
		{"duplicate name", `{"silu": {"of": "gu", "offset": 0, "shape": [8], "strides": [4], "elem": 4}, "silu": {}}`, ErrSyntax},
		{"duplicate key", `{"silu": {"of": "gu", "of": "gu", "offset": 0, "shape": [8], "strides": [4], "elem": 4}}`, ErrSyntax},
		{"Of", `{"silu": {"Of": "gu", "offset": 0, "shape": [8], "strides": [4], "elem": 4}}`, ErrUnknownKey},
	}
	for _, c := range cases {
		_, err := ParsePlan([]byte(head + c.placements + "}"))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if !errors.Is(err, ErrPlacement) {
			t.Errorf("%s: %v does not match ErrPlacement", c.name, err)
		}
	}
	if p, err := ParsePlan([]byte(head + "null}")); err != nil || len(p.Placements) != 0 {
		t.Errorf("null placements: %v", err)
	}
}
