package fuzz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/invariants"
)

// orderConstraints lists, straight from the program's steps, the pairs
// (a, b) of ops where a must complete before b in any execution: ops of
// one engine complete in submission order, an op completes after every op
// it waits for, and an op submitted after a host sync on x completes after
// x (it is not even submitted before x completes).
func orderConstraints(p *Program) [][2]int {
	var out [][2]int
	var last [MaxEngines]int
	for e := range last {
		last[e] = -1
	}
	var synced []int // ops host-synced on so far
	for i := range p.Steps {
		st := &p.Steps[i]
		switch st.Kind {
		case StepHostSync:
			synced = append(synced, st.Op)
		case StepSubmit:
			if l := last[st.Engine]; l >= 0 {
				out = append(out, [2]int{l, st.Op})
			}
			last[st.Engine] = st.Op
			for _, w := range st.Waits {
				out = append(out, [2]int{w, st.Op})
			}
			for _, x := range synced {
				out = append(out, [2]int{x, st.Op})
			}
		}
	}
	return out
}

// permutations calls f with every permutation of 0..n-1.
func permutations(n int, f func([]int)) {
	perm := make([]int, n)
	used := make([]bool, n)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(perm)
			return
		}
		for i := 0; i < n; i++ {
			if !used[i] {
				used[i], perm[k] = true, i
				rec(k + 1)
				used[i] = false
			}
		}
	}
	rec(0)
}

// respects reports whether order (a complete order, or the prefix a run got
// through) puts a before b for every constraint whose b it contains.
func respects(order []int, cons [][2]int) bool {
	pos := map[int]int{}
	for i, op := range order {
		pos[op] = i
	}
	for _, c := range cons {
		pb, okb := pos[c[1]]
		if !okb {
			continue
		}
		if pa, oka := pos[c[0]]; !oka || pa > pb {
			return false
		}
	}
	return true
}

func orderKey(order []int) string { return fmt.Sprint(order) }

// TestOrdersEveryCompletionOrder checks the claim behind
// ExploreOptions.Orders against brute force: for generated programs, the
// completion orders the host-first enumeration visits are each visited
// once, each respects the program's constraints, and — for every program
// whose host never has to wait for space or for a donation's bytes — they
// are exactly the permutations of the ops that respect FIFO engines, waits
// and host syncs. Each program runs as generated (small arenas: the host
// often waits, and only the first two properties are checked) and again in
// an arena large enough that it seldom does.
func TestOrdersEveryCompletionOrder(t *testing.T) {
	pols := subarena.SafePolicies()
	seeds, opsMax := uint64(40), 6
	if invariants.RaceEnabled {
		seeds, opsMax, pols = 6, 5, pols[:1]
	}
	var compared, waited, orders, most int
	for ops := 3; ops <= opsMax; ops++ {
		cfg := SmallConfig()
		cfg.Ops = ops
		for seed := uint64(0); seed < seeds; seed++ {
			for _, big := range []bool{false, true} {
				p := Generate(NewRand(seed+uint64(ops)<<20), cfg)
				if big {
					p.Capacity = 4096
				}
				cons := orderConstraints(p)
				want := map[string]bool{}
				permutations(len(p.Ops), func(perm []int) {
					if respects(perm, cons) {
						want[orderKey(perm)] = true
					}
				})
				for _, pol := range pols {
					got := map[string]bool{}
					anyWait := false
					var bad string
					r := Explore(p, pol, ExploreOptions{Orders: true, visit: func(s *Sim) {
						order := s.completionOrder()
						k := orderKey(order)
						switch {
						case got[k]:
							bad = "order " + k + " visited twice"
						case !respects(order, cons):
							bad = "order " + k + " breaks a constraint"
						case s.res.Failure == nil && !s.res.Stuck && len(order) != len(p.Ops):
							bad = "order " + k + " is incomplete"
						}
						got[k] = true
						anyWait = anyWait || s.res.Waits > 0
					}})
					if bad != "" || r.Failures() > 0 || !r.Complete {
						t.Fatalf("ops %d seed %d big %v %v: %s; %d failures\n%v", ops, seed, big, pol, bad, r.Failures(), p)
					}
					most = max(most, r.Runs)
					if anyWait {
						waited++
						continue
					}
					compared++
					orders += len(got)
					if len(got) != len(want) {
						t.Fatalf("ops %d seed %d big %v %v: %d orders visited, %d linear extensions\n%v", ops, seed, big, pol, len(got), len(want), p)
					}
					for k := range want {
						if !got[k] {
							t.Fatalf("ops %d seed %d big %v %v: order %s never visited\n%v", ops, seed, big, pol, k, p)
						}
					}
				}
			}
		}
	}
	t.Logf("%d enumerations equal to brute force (%d orders, at most %d for one program); %d had the host wait and were checked for soundness only", compared, orders, most, waited)
	if compared < waited {
		t.Fatalf("only %d of %d enumerations compared with brute force", compared, compared+waited)
	}
}

// outcomeSet runs an enumeration with scheduler d and options ro, and
// returns each run's completion order and placements.
func outcomeSet(p *Program, pol subarena.Policy, d *dfsScheduler, ro RunOptions) (map[string]bool, int) {
	set := map[string]bool{}
	runs := 0
	for {
		runWith(p, pol, d, ro, func(s *Sim) {
			set[fmt.Sprintf("%v %x", s.completionOrder(), s.res.placements)] = true
		})
		runs++
		if !d.next() {
			return set, runs
		}
	}
}

// TestDelaysBound checks ExploreOptions.Delays: with no delay the bounded
// enumeration of the full choice tree is exactly the host-first one (same
// runs, same orders and placements); each added delay only adds runs; and
// with as many delays as the program has ops it is the full
// enumeration.
func TestDelaysBound(t *testing.T) {
	cfg := SmallConfig()
	cfg.Ops = 4
	seeds := uint64(8)
	if invariants.RaceEnabled {
		seeds, cfg.Ops = 2, 3
	}
	for seed := uint64(0); seed < seeds; seed++ {
		p := Generate(NewRand(seed), cfg)
		for _, pol := range []subarena.Policy{subarena.IROrder, subarena.SubrangeFenced} {
			hostFirst, n0 := outcomeSet(p, pol, &dfsScheduler{}, RunOptions{HostFirst: true})
			bounded0, m0 := outcomeSet(p, pol, &dfsScheduler{bounded: true}, RunOptions{EagerHost: true})
			if n0 != m0 || !mapsEqual(hostFirst, bounded0) {
				t.Fatalf("seed %d %v: host-first %d runs, bounded with no delay %d runs (outcome sets equal: %v)\n%v", seed, pol, n0, m0, mapsEqual(hostFirst, bounded0), p)
			}
			prev, prevRuns := bounded0, m0
			for k := 1; k <= 2; k++ {
				set, runs := outcomeSet(p, pol, &dfsScheduler{bounded: true, delays: k}, RunOptions{EagerHost: true})
				if runs < prevRuns {
					t.Fatalf("seed %d %v: %d runs with %d delays, %d with one fewer", seed, pol, runs, k, prevRuns)
				}
				for o := range prev {
					if !set[o] {
						t.Fatalf("seed %d %v: outcome %s lost going to %d delays", seed, pol, o, k)
					}
				}
				prev, prevRuns = set, runs
			}
			_, full := outcomeSet(p, pol, &dfsScheduler{}, RunOptions{EagerHost: true})
			// Every deviation is a completion: there are at most len(p.Ops).
			_, all := outcomeSet(p, pol, &dfsScheduler{bounded: true, delays: len(p.Ops)}, RunOptions{EagerHost: true})
			if full != all {
				t.Fatalf("seed %d %v: full enumeration %d runs, unbounded delays %d", seed, pol, full, all)
			}
			if seed == 0 {
				t.Logf("%v: %d orders, %d runs with 2 delays, %d interleavings", pol, n0, prevRuns, full)
			}
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestSeedScenariosOrders runs every seed scenario in every completion
// order, and with one delay: the four safe policies never fail, and
// ir-order is caught reading a wrong version in every hazardous scenario —
// already by the completion orders alone — and in no other.
func TestSeedScenariosOrders(t *testing.T) {
	var caught []string
	for _, sc := range Scenarios() {
		for _, delays := range []int{0, 1} {
			for _, pol := range subarena.Policies() {
				r := Explore(sc.Program, pol, ExploreOptions{Orders: true, Delays: delays, Eager: true})
				if !r.Complete || r.Runs == 0 {
					t.Fatalf("%s %v: enumeration incomplete after %d runs", sc.Name, pol, r.Runs)
				}
				switch {
				case pol.Safe() && r.Failures() > 0:
					t.Fatalf("%s %v delays %d: %d of %d runs failed:\n%s", sc.Name, pol, delays, r.Failures(), r.Runs, r.First.Report())
				case !pol.Safe() && sc.Hazard && r.WrongReads == 0:
					t.Fatalf("%s %v delays %d: not caught in %d runs", sc.Name, pol, delays, r.Runs)
				case !pol.Safe() && r.Failures() != r.WrongReads, !pol.Safe() && !sc.Hazard && r.Failures() > 0:
					t.Fatalf("%s %v delays %d: failed otherwise than expected:\n%s", sc.Name, pol, delays, r.First.Report())
				case !pol.Safe() && delays == 0:
					caught = append(caught, fmt.Sprintf("%s %d/%d", sc.Name, r.WrongReads, r.Runs))
				}
			}
		}
	}
	t.Logf("ir-order wrong reads per completion orders: %s", strings.Join(caught, ", "))
}

// TestOrdersReplay checks that a failure found in orders mode replays
// from its recorded choices and options.
func TestOrdersReplay(t *testing.T) {
	sc := Scenarios()[4] // concat-members
	for _, delays := range []int{0, 1} {
		r := Explore(sc.Program, subarena.IROrder, ExploreOptions{Orders: true, Delays: delays, Eager: true, StopAtFailure: true})
		f := r.First
		if f == nil {
			t.Fatalf("delays %d: ir-order not caught", delays)
		}
		if f.Options.HostFirst != (delays == 0) || !strings.Contains(f.Report(), fmt.Sprintf("(host-first %v, eager host %v)", delays == 0, true)) {
			t.Fatalf("delays %d: options %+v in\n%s", delays, f.Options, f.Report())
		}
		again := RunWith(f.Program, f.Policy, &ReplayScheduler{Choices: f.Choices}, f.Options)
		if again.Failure == nil || again.Failure.Detail != f.Detail {
			t.Fatalf("delays %d: replay gave %v, want %q", delays, again.Failure, f.Detail)
		}
	}
}
