package analysis

import (
	"testing"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace"
)

// TestMirror checks that the Shadow driven by Run makes exactly the
// Allocator's decisions under trace.Replay: the same offset for every
// buffer, the same high-water mark, the same LiveLB.
func TestMirror(t *testing.T) {
	quick := testing.Short()
	for _, w := range bench.Workloads(quick) {
		tr, err := w.Build()
		if err != nil {
			t.Fatal(err)
		}
		p, err := tr.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		in, err := NewInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, pol := range []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced} {
			for _, fit := range []arena.Fit{arena.FitFast, arena.FitLean} {
				want, err := trace.Replay(p, trace.ReplayOptions{Policy: pol, Fit: fit})
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := Run(in, Options{Mode: PolicyMode(pol == subarena.WholeFenced), Fit: fit})
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
// traces with the original schedule (same LiveLB), that trace.Replay and
// the Shadow agree on them, and that the Allocator's plans for them pass
// trace.Check.
func TestHostVariant(t *testing.T) {
	for _, w := range bench.Workloads(true) {
		tr, _ := w.Build()
		p, _ := tr.Resolve()
		in, err := NewInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []Completions{Poll, Stall} {
			t2 := HostVariant(in, c)
			p2, err := t2.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			in2, err := NewInfo(p2)
			if err != nil {
				t.Fatal(err)
			}
			if in2.LiveLB != in.LiveLB || in2.Makespan != in.Makespan {
				t.Errorf("%s %v: schedule changed: LiveLB %d makespan %d, was %d %d", w.Name, c, in2.LiveLB, in2.Makespan, in.LiveLB, in.Makespan)
			}
			got, _, err := Run(in2, Options{Mode: PolicyMode(false), Fit: arena.FitLean})
			if err != nil {
				t.Fatal(err)
			}
			want, err := trace.Replay(p2, trace.ReplayOptions{Policy: subarena.SubrangeFenced, Fit: arena.FitLean})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := trace.Check(p2, want.Plan)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Safe {
				t.Errorf("%s %v: plan unsafe: %d violations", w.Name, c, len(rep.Violations))
			}
			if got.HWM != want.HWM {
				t.Errorf("%s %v: HWM %d, trace.Replay %d", w.Name, c, got.HWM, want.HWM)
			}
			t.Logf("%s %v: %d syncs added, HWM/LiveLB %.3f", w.Name, c, len(p2.Syncs)-len(p.Syncs), got.Ratio)
		}
	}
}
