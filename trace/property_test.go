package trace

import (
	"math/rand/v2"
	"testing"

	subarena "github.com/subarena/subarena"
)

// checkKeys aggregates a Report the way bruteCheck keys its answer.
func checkKeys(rep *Report) map[oracleKey]int64 {
	out := map[oracleKey]int64{}
	for _, v := range rep.Violations {
		k := oracleKey{v.Rule, v.Earlier.Buffer, v.Earlier.Op, v.Earlier.Chain[0], v.Later.Buffer, v.Later.Op, v.Later.Chain[0]}
		out[k] += v.Bytes
	}
	return out
}

func equalKeys(a, b map[oracleKey]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestReplayCheckAgainstOracles replays random traces under every policy and compares
// Check with a byte-by-byte checker and LiveLowerBound with a granule-by-granule one; every
// plan of a safe policy must be safe and at least LiveLB.
func TestReplayCheckAgainstOracles(t *testing.T) {
	n := 150
	if testing.Short() || raceEnabled {
		n = 30
	}
	rng := rand.New(rand.NewPCG(1, 2))
	unsafeSeen := 0
	rules := map[string]int{}
	for i := 0; i < n; i++ {
		tr := randomTrace(rng, 10+rng.IntN(40))
		p, err := tr.Resolve()
		if err != nil {
			t.Fatalf("trace %d: generated trace invalid: %v\n%s", i, err, Marshal(tr))
		}
		again, err := Parse(Marshal(tr))
		if err != nil || !again.Equal(tr) {
			t.Fatalf("trace %d: round trip: %v", i, err)
		}
		if err := p.CheckInvariants(); err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		m := buildOracle(tr)
		// Random plans (overlapping freely) reach every rule of the checker.
		for j := 0; j < 3; j++ {
			plan := &Plan{Trace: tr.Name, Offsets: map[string]int64{}}
			for _, b := range p.Buffers {
				if !b.External {
					off := rng.Int64N(48)
					plan.Offsets[b.Name] = off
					plan.Size = max(plan.Size, off+b.Size)
				}
			}
			rep, err := Check(p, plan)
			if err != nil {
				t.Fatalf("trace %d: check of a random plan: %v", i, err)
			}
			if got, want := checkKeys(rep), bruteCheck(m, plan); !equalKeys(got, want) {
				t.Fatalf("trace %d: random plan %v: check disagrees with the oracle\ngot  %v\nwant %v\n%s",
					i, plan.Offsets, got, want, Marshal(tr))
			}
			for _, v := range rep.Violations {
				rules[v.Rule]++
			}
		}
		for _, pol := range subarena.Policies() {
			res, err := Replay(p, ReplayOptions{Policy: pol, CheckInvariants: true})
			if err != nil {
				t.Fatalf("trace %d %v: replay: %v\n%s", i, pol, err, Marshal(tr))
			}
			rep, err := Check(p, res.Plan)
			if err != nil {
				t.Fatalf("trace %d %v: check: %v", i, pol, err)
			}
			want := bruteCheck(m, res.Plan)
			if got := checkKeys(rep); !equalKeys(got, want) {
				t.Fatalf("trace %d %v: check disagrees with the oracle\ngot  %v\nwant %v\n%s", i, pol, got, want, Marshal(tr))
			}
			if pol.Safe() && !rep.Safe {
				t.Fatalf("trace %d %v: plan of a safe policy is unsafe: %v\n%s", i, pol, rep.Violations[0].String(), Marshal(tr))
			}
			if !rep.Safe {
				unsafeSeen++
			}
			start := make([]int64, len(res.OpTimes))
			end := make([]int64, len(res.OpTimes))
			for k, o := range res.OpTimes {
				start[k], end[k] = o.Start, o.End
			}
			if lb := bruteLiveLB(m, start, end, res.Makespan); lb != res.LiveLB {
				t.Fatalf("trace %d %v: LiveLB %d, oracle %d\n%s", i, pol, res.LiveLB, lb, Marshal(tr))
			}
			if err := p.CheckInvariants(); err != nil {
				t.Fatalf("trace %d %v: after replay and check: %v", i, pol, err)
			}
			for _, v := range rep.Violations {
				rules[v.Rule]++
			}
			if pol.Safe() && res.LiveLB > res.HWM {
				t.Fatalf("trace %d %v: LiveLB %d above HWM %d", i, pol, res.LiveLB, res.HWM)
			}
		}
	}
	for _, r := range []string{ViolationUnordered, ViolationSameOp, ViolationHeld} {
		if rules[r] == 0 {
			t.Fatalf("no %q violation seen: the generator does not exercise that rule", r)
		}
	}
	if unsafeSeen == 0 {
		t.Fatalf("no ir-order plan was unsafe: the generator does not exercise the checker")
	}
	t.Logf("%d unsafe ir-order plans among %d traces; violations by rule: %v", unsafeSeen, n, rules)
}
