package replay

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/internal/tracetest"
)

// TestSharedDataReplayAndCheck: every MiniMalloc instance and the ggml trace import,
// replay under every policy, and pass check.Plan with the replayed plan under every safe one.
func TestSharedDataReplayAndCheck(t *testing.T) {
	files := append(sharedFiles(t, "minimalloc/*.csv"), sharedFiles(t, "ggml/*.json")...)
	for _, f := range files {
		p := tracetest.Program(t, f)
		for _, pol := range subarena.Policies() {
			res, err := Run(p, Options{Policy: pol})
			if err != nil {
				t.Fatalf("%s %v: %v", f, pol, err)
			}
			rep, err := check.Plan(p, res.Plan)
			if err != nil {
				t.Fatalf("%s %v: check: %v", f, pol, err)
			}
			if pol.Safe() && !rep.Safe {
				t.Fatalf("%s %v: unsafe plan: %s", f, pol, rep.Violations[0].String())
			}
			if pol.Safe() && res.HWM < res.LiveLB {
				t.Fatalf("%s %v: HWM %d below LiveLB %d", f, pol, res.HWM, res.LiveLB)
			}
			if res.Buffers != p.NumAllocs() || res.Ops != len(p.Ops) || len(res.Plan.Offsets) != res.Buffers {
				t.Fatalf("%s %v: counts %d buffers %d ops %d offsets", f, pol, res.Buffers, res.Ops, len(res.Plan.Offsets))
			}
		}
	}
}

// TestMiniMallocConflicts: in a replayed plan, two buffers overlap only if their
// half-open lifetimes in the CSV do not intersect (MiniMalloc's definition).
func TestMiniMallocConflicts(t *testing.T) {
	for _, f := range sharedFiles(t, "minimalloc/*.csv") {
		mm := readMiniMalloc(t, f)
		p := tracetest.Program(t, f)
		for _, pol := range subarena.Policies() {
			res, err := Run(p, Options{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			overlaps := 0
			for i, a := range mm.Buffers {
				for _, b := range mm.Buffers[i+1:] {
					oa, ob := res.Plan.Offsets[a.ID], res.Plan.Offsets[b.ID]
					if oa < ob+b.Size && ob < oa+a.Size {
						overlaps++
						if a.Lower < b.Upper && b.Lower < a.Upper {
							t.Fatalf("%s %v: %s [%d,%d) and %s [%d,%d) overlap in space and time", f, pol,
								a.ID, a.Lower, a.Upper, b.ID, b.Lower, b.Upper)
						}
					}
				}
			}
			if pol == subarena.SubrangeFenced && overlaps == 0 {
				t.Fatalf("%s: no buffers share space: the test would pass vacuously", f)
			}
		}
	}
}

// TestMiniMallocLowerBound: on a one-engine MiniMalloc trace LiveLB is the instance's
// classic lower bound (max over time of the live sizes), here computed from the CSV.
func TestMiniMallocLowerBound(t *testing.T) {
	for _, f := range sharedFiles(t, "minimalloc/*.csv") {
		mm := readMiniMalloc(t, f)
		var want int64
		for _, a := range mm.Buffers {
			var live int64 // at time a.Lower
			for _, b := range mm.Buffers {
				if b.Lower <= a.Lower && a.Lower < b.Upper {
					live += b.Size
				}
			}
			want = max(want, live)
		}
		p := tracetest.Program(t, f)
		res, err := Run(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.LiveLB != want {
			t.Fatalf("%s: LiveLB %d, CSV lower bound %d", f, res.LiveLB, want)
		}
	}
}

// TestIROrderCounterexample: on a two-engine trace whose copy engine reads through a view
// chain, the ir-order plan hands the read bytes to a compute writer; check.Plan names the
// reader, its view chain and the missing edge. Every safe policy's plan passes.
func TestIROrderCounterexample(t *testing.T) {
	p := tracetest.Program(t, "../testdata/split-qkv.json")
	res, err := Run(p, Options{Policy: subarena.IROrder})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.Plan(p, res.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Safe || len(rep.Violations) == 0 {
		t.Fatalf("ir-order plan %v passed the check", res.Plan.Offsets)
	}
	v := rep.Violations[0]
	if v.Earlier.Op != "offload_v" || v.Earlier.Engine != "copy" || strings.Join(v.Earlier.Chain, ">") != "v>qkv" ||
		v.Later.Op != "use_tmp" || v.Later.Buffer != "tmp" || v.MissingEdge() != "offload_v -> use_tmp" ||
		v.Rule != check.ViolationUnordered {
		t.Fatalf("unexpected counterexample: %s", v.String())
	}
	// v covers bytes [1024, 1536) of every 1536-byte row; tmp (8192 bytes at qkv's
	// offset) overlaps rows 0..5, so the violation is 5 whole runs and part of none.
	if v.Bytes != 5*512 || v.Ranges[0].Lo != res.Plan.Offsets["qkv"]+1024 {
		t.Fatalf("violating bytes %d from %v", v.Bytes, v.Ranges)
	}
	for _, pol := range subarena.Policies() {
		if !pol.Safe() {
			continue
		}
		res, err := Run(p, Options{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := check.Plan(p, res.Plan); err != nil || !rep.Safe {
			t.Fatalf("%v: %v %+v", pol, err, rep)
		}
	}
}

// TestGGMLReproducesGGML: replaying a ggml trace under ir-order with donation places
// every tensor where ggml-alloc put it (docs/TRACE.md: replay reproduces ggml's graph
// allocator on its own traces), which checks the importer's mapping end to end.
func TestGGMLReproducesGGML(t *testing.T) {
	for _, f := range sharedFiles(t, "ggml/*.json") {
		data := testutil.Read(t, ".", f)
		var g struct {
			Size    int64 `json:"buffer_size_after_reserve"`
			Tensors []struct {
				Name   string `json:"name"`
				Offset *int64 `json:"offset"`
				IsView bool   `json:"is_view"`
			} `json:"tensors"`
		}
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		p := tracetest.Program(t, f)
		res, err := Run(p, Options{Policy: subarena.IROrder})
		if err != nil {
			t.Fatal(err)
		}
		if res.HWM != g.Size {
			t.Errorf("%s: HWM %d, ggml's buffer %d", f, res.HWM, g.Size)
		}
		for _, x := range g.Tensors {
			if x.Offset == nil || x.IsView {
				continue
			}
			if got := res.Plan.Offsets[x.Name]; got != *x.Offset {
				t.Errorf("%s: %s at %d, ggml put it at %d", f, x.Name, got, *x.Offset)
			}
		}
		if res.Donated == 0 {
			t.Errorf("%s: no donation", f)
		}
	}
}

// TestReplayAllDiscarded: a buffer whose every byte the host discards through views is
// retired by the Allocator; an op may still name an empty view of it and the host still
// releases it, both valid steps, and replay takes them as the no-ops they are, under
// every policy.
func TestReplayAllDiscarded(t *testing.T) {
	tr, err := trace.Parse([]byte(`{
  "format": "subarena-trace/v1", "name": "all-discarded", "granule": 4,
  "engines": ["e"],
  "steps": [
    {"alloc": "a", "size": 8, "shape": [2], "elem": 4},
    {"op": "fill", "writes": ["a"]},
    {"view": "lo", "of": "a", "offset": 0, "shape": [1], "strides": [4], "elem": 4},
    {"view": "hi", "of": "a", "offset": 4, "shape": [1], "strides": [4], "elem": 4},
    {"view": "none", "of": "a", "offset": 0, "shape": [0], "strides": [4], "elem": 4},
    {"release": "lo"},
    {"release": "hi"},
    {"op": "touch", "reads": ["none"]},
    {"alloc": "b", "size": 8},
    {"op": "use_b", "writes": ["b"]},
    {"release": "a"},
    {"release": "b"}
  ]
}`))
	if err != nil {
		t.Fatal(err)
	}
	p := tracetest.Resolve(t, tr)
	for _, pol := range subarena.Policies() {
		res, err := Run(p, Options{Policy: pol, CheckInvariants: true})
		if err != nil {
			t.Fatalf("%v: %v", pol, err)
		}
		rep, err := check.Plan(p, res.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if pol.Safe() && !rep.Safe {
			t.Fatalf("%v: %s", pol, rep.Violations[0].String())
		}
		if res.Final.Live != 0 {
			t.Fatalf("%v: %d bytes live at the end", pol, res.Final.Live)
		}
	}
}

// TestReplayAllocatorTime: the time inside the Allocator's calls is measured only when
// asked, and the measurement changes nothing else the replay reports.
func TestReplayAllocatorTime(t *testing.T) {
	p := tracetest.Program(t, "../testdata/split-qkv.json")
	plain, err := Run(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	timed, err := Run(p, Options{TimeAllocator: true})
	if err != nil {
		t.Fatal(err)
	}
	if plain.AllocatorTime != 0 || timed.AllocatorTime <= 0 {
		t.Fatalf("allocator time %v unasked, %v asked", plain.AllocatorTime, timed.AllocatorTime)
	}
	timed.AllocatorTime = 0
	if !reflect.DeepEqual(plain, timed) {
		t.Fatal("timing the allocator changed the replay's result")
	}
}

// TestReplayStop: a closed Stop ends the replay with trace.ErrStopped.
func TestReplayStop(t *testing.T) {
	tr := tracetest.Load(t, "../testdata/split-qkv.json")
	stop := make(chan struct{})
	close(stop)
	if _, err := Run(tracetest.Resolve(t, tr), Options{Stop: stop}); !errors.Is(err, trace.ErrStopped) {
		t.Fatalf("replay with Stop closed: %v", err)
	}
}

// TestScheduleOverflowTwoEngines: ops of the largest cost each on two engines are a valid
// trace (trace's TestScheduleOverflow), and the replay schedules them without overflow.
func TestScheduleOverflowTwoEngines(t *testing.T) {
	tr, err := trace.Parse([]byte(`{"format": "subarena-trace/v1", "engines": ["c", "d"], "steps": [` +
		`{"op": "a", "cost": 9223372036854775807}, {"op": "b", "engine": "d", "cost": 9223372036854775807}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(tracetest.Resolve(t, tr), Options{}); err != nil {
		t.Fatal(err)
	}
}
