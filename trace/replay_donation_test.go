package trace

import (
	"testing"
)

// discardBeforeDonor is the smallest trace on which donation and the release order of
// docs/TRACE.md's safety rule disagree: neg writes b in place over a (a dense read of exactly
// b's size that nothing uses later), then the host discards lo, the first half of b,
// before it releases a. For the bytes of lo, b lets them go first (at the discard) and a
// last (at its release), so the rule requires every use through b (neg) to happen-before
// every use through a (fill, neg): fill -> neg is the only order there is, and neg ->
// fill is missing. Donating b over a would make a plan Check rejects.
const discardBeforeDonor = `{
  "format": "subarena-trace/v1", "name": "discard-before-donor", "granule": 4,
  "engines": ["e"],
  "steps": [
    {"alloc": "a", "size": 16, "shape": [4], "elem": 4},
    {"op": "fill", "writes": ["a"]},
    {"alloc": "b", "size": 16, "shape": [4], "elem": 4},
    {"op": "neg", "reads": ["a"], "writes": ["b"], "inplace": true},
    {"view": "lo", "of": "b", "offset": 0, "shape": [2], "strides": [4], "elem": 4},
    {"view": "hi", "of": "b", "offset": 8, "shape": [2], "strides": [4], "elem": 4},
    {"release": "lo"},
    {"op": "sum", "reads": ["hi"]},
    {"release": "a"},
    {"release": "b"}
  ]
}`

// TestDonationFollowsReleaseOrder: replay does not donate a buffer's bytes to an output
// that lets some of them go (here by a discard) before the buffer does; the plan that
// donation would make is unsafe by Check and by the byte-by-byte oracle alike. With the
// discard moved after a's release, a goes first for every byte and the donation stands.
func TestDonationFollowsReleaseOrder(t *testing.T) {
	tr, err := Parse([]byte(discardBeforeDonor))
	if err != nil {
		t.Fatal(err)
	}
	p := mustResolve(t, tr)
	// The plan donation would make: b exactly over a.
	over := &Plan{Trace: tr.Name, Size: 16, Offsets: map[string]int64{"a": 0, "b": 0}}
	rep, err := Check(p, over)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Safe || len(rep.Violations) != 1 || rep.Violations[0].MissingEdge() != "neg -> fill" ||
		rep.Violations[0].Bytes != 8 {
		t.Fatalf("b over a: %+v", rep)
	}
	if want := bruteCheck(buildOracle(tr), over); !equalKeys(checkKeys(rep), want) {
		t.Fatalf("b over a: check %v, oracle %v", checkKeys(rep), want)
	}
	res, err := Replay(p, ReplayOptions{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("replay plan %v: %v %+v", res.Plan.Offsets, err, rep)
	}
	if res.Donated != 0 || res.Plan.Offsets["b"] == res.Plan.Offsets["a"] {
		t.Fatalf("replay donated: %d donations, plan %v", res.Donated, res.Plan.Offsets)
	}

	// a released before the discard: a lets every byte go first, and donation is safe.
	steps := tr.Steps
	late := &Trace{Name: tr.Name, Granule: tr.Granule, Engines: tr.Engines}
	late.Steps = append(late.Steps, steps[:6]...)
	late.Steps = append(late.Steps, steps[8], steps[6], steps[7], steps[9])
	p = mustResolve(t, late)
	if rep, err := Check(p, over); err != nil || !rep.Safe {
		t.Fatalf("b over a with a released first: %v %+v", err, rep)
	}
	res, err = Replay(p, ReplayOptions{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Donated != 1 || res.Plan.Offsets["b"] != res.Plan.Offsets["a"] {
		t.Fatalf("no donation with a released first: %d donations, plan %v", res.Donated, res.Plan.Offsets)
	}
	if rep, err := Check(p, res.Plan); err != nil || !rep.Safe {
		t.Fatalf("replay plan %v: %v %+v", res.Plan.Offsets, err, rep)
	}
}
