package analysis

import (
	"os"
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// testWorkloads returns the bench workloads at quick settings, or at full
// size when SUBARENA_ANALYSIS_FULL is set (minutes, not seconds).
func testWorkloads() []bench.Workload {
	return bench.Workloads(os.Getenv("SUBARENA_ANALYSIS_FULL") == "")
}

// infoOf builds and resolves w's trace and returns its program and Info.
func infoOf(t *testing.T, w bench.Workload) (*trace.Program, *Info) {
	t.Helper()
	p := benchtest.Build(t, w.Build)
	return p, newInfo(t, p)
}

// newInfo is NewInfo(p); it fails the test on error.
func newInfo(t *testing.T, p *trace.Program) *Info {
	t.Helper()
	in, err := NewInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// checkWritten runs in under opts with the fenced policy whole selects,
// resolves the host program the driver writes back (written), replays it
// under that policy, and fails unless the driver's own plan passes
// check.Plan against it. It returns the run, its driver, the written
// program, its replay and the policy.
func checkWritten(t *testing.T, name string, in *Info, whole bool, opts Options, written func(*driver) *trace.Trace) (*result, *driver, *trace.Program, *replay.Result, subarena.Policy) {
	t.Helper()
	pol := subarena.SubrangeFenced
	if whole {
		pol = subarena.WholeFenced
	}
	opts.Mode, opts.Fit = PolicyMode(whole), arena.FitLean
	got, d, err := run(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	p2 := benchtest.Resolve(t, written(d))
	want := benchtest.Replay(t, p2, replay.Options{Policy: pol, Fit: arena.FitLean})
	rep, err := check.Plan(p2, got.Plan(in))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Safe {
		t.Errorf("%s %v: unsafe: %d violations", name, pol, len(rep.Violations))
	}
	return got, d, p2, want, pol
}

// TestMirror checks that the shadow driven by run makes exactly the
// Allocator's decisions under replay.Run: the same offset for every
// buffer, the same high-water mark, the same LiveLB.
func TestMirror(t *testing.T) {
	for _, w := range testWorkloads() {
		p, in := infoOf(t, w)
		for _, pol := range []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced} {
			for _, fit := range []arena.Fit{arena.FitFast, arena.FitLean} {
				want := benchtest.Replay(t, p, replay.Options{Policy: pol, Fit: fit})
				got, _, err := run(in, Options{Mode: PolicyMode(pol == subarena.WholeFenced), Fit: fit})
				if err != nil {
					t.Fatalf("%s %v %v: %v", w.Name, pol, fit, err)
				}
				if got.HWM != want.HWM || got.LiveLB != want.LiveLB || got.Donated != want.Donated {
					t.Errorf("%s %v %v: HWM %d LiveLB %d donated %d, replay %d %d %d", w.Name, pol, fit,
						got.HWM, got.LiveLB, got.Donated, want.HWM, want.LiveLB, want.Donated)
				}
				bad := 0
				for b := range p.Buffers {
					if p.Buffers[b].External {
						continue
					}
					if off := want.Plan.Offsets[p.Buffers[b].Name]; off != got.Offsets[b] {
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("%s %v %v: %d offsets differ", w.Name, pol, fit, bad)
				}
			}
		}
	}
}

// TestHostVariant checks that the Poll and Stall host programs are valid
// traces with the original schedule (same LiveLB), that replay.Run and
// the shadow agree on them, and that the Allocator's plans for them pass
// check.Plan.
func TestHostVariant(t *testing.T) {
	for _, w := range bench.Workloads(true) {
		p, in := infoOf(t, w)
		for _, c := range []Completions{Poll, Stall} {
			t2 := hostVariant(in, c)
			p2 := benchtest.Resolve(t, t2)
			in2 := newInfo(t, p2)
			if in2.LiveLB != in.LiveLB || in2.Makespan != in.Makespan {
				t.Errorf("%s %v: schedule changed: LiveLB %d makespan %d, was %d %d", w.Name, c, in2.LiveLB, in2.Makespan, in.LiveLB, in.Makespan)
			}
			got, _, err := run(in2, Options{Mode: PolicyMode(false), Fit: arena.FitLean})
			if err != nil {
				t.Fatal(err)
			}
			want := benchtest.Replay(t, p2, replay.Options{Policy: subarena.SubrangeFenced, Fit: arena.FitLean})
			rep, err := check.Plan(p2, want.Plan)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Safe {
				t.Errorf("%s %v: plan unsafe: %d violations", w.Name, c, len(rep.Violations))
			}
			if got.HWM != want.HWM {
				t.Errorf("%s %v: HWM %d, replay.Run %d", w.Name, c, got.HWM, want.HWM)
			}
			t.Logf("%s %v: %d syncs added, HWM/LiveLB %.3f", w.Name, c, len(p2.Syncs)-len(p.Syncs), got.Ratio)
		}
	}
}

// TestStallOnGrow runs the host that waits (up to the horizon) only before
// an alloc that would raise the high-water mark, and checks its trace.
func TestStallOnGrow(t *testing.T) {
	for _, w := range testWorkloads() {
		p, in := infoOf(t, w)
		for _, whole := range []bool{false, true} {
			got, d, p2, want, pol := checkWritten(t, w.Name, in, whole, Options{Completions: StallOnGrow}, (*driver).WithLearned)
			if want.LiveLB != in.LiveLB {
				t.Errorf("%s: schedule changed", w.Name)
			}
			nallocs := p.NumAllocs()
			t.Logf("%-14s %-15v stalls %4d of %4d allocs, %4d syncs added: HWM/LiveLB %.3f (its trace replayed: %.3f)",
				w.Name, pol, d.Stalls, nallocs, len(p2.Syncs)-len(p.Syncs), got.Ratio, want.Overhead+1)
		}
	}
}

// TestPredictWait runs the Allocator letting allocs take held bytes whose
// users are expected to be done when the buffer is first used, with the
// waits that orders its ops after them, and checks the trace with the
// waits: same schedule, and replay.Run's plan for it passes check.Plan.
func TestPredictWait(t *testing.T) {
	for _, w := range testWorkloads() {
		_, in := infoOf(t, w)
		for _, whole := range []bool{false, true} {
			// The driver's own plan is checked against the trace with the waits.
			got, d, _, want, pol := checkWritten(t, w.Name, in, whole, Options{PredictWait: PredictSchedule}, (*driver).WithWaits)
			if want.LiveLB != in.LiveLB || want.Makespan != in.Makespan {
				t.Errorf("%s: schedule changed", w.Name)
			}
			n := 0
			for _, ws := range d.AddedWaits {
				n += len(ws)
			}
			t.Logf("%-14s %-15v %4d waits added: HWM/LiveLB %.3f (its trace replayed: %.3f)", w.Name, pol, n, got.Ratio, want.Overhead+1)
		}
	}
}
