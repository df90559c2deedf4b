package fuzz

import (
	"errors"
	"strings"
	"testing"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/invariants"
)

// TestSeedScenarios enumerates every interleaving of each seed scenario
// under every policy, with and without eager host steps: the unsafe
// ir-order must read a wrong version in some interleaving of every
// hazardous scenario (and of no other), the four safe policies never.
// Under the race detector it runs eager enumerations only, ir-order until
// caught and the safe policies for their first 200 interleavings.
func TestSeedScenarios(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			for _, pe := range policiesTimesEager() {
				pol := pe.pol
				opt := ExploreOptions{Eager: pe.eager}
				if invariants.RaceEnabled {
					if !pe.eager {
						continue
					}
					opt.StopAtFailure = !pol.Safe() && sc.Hazard
					if pol.Safe() {
						opt.Limit = 200
					}
				}
				r := Explore(sc.Program, pol, opt)
				t.Logf("%-21v eager=%-5v %6d interleavings, %5d wrong reads, %d other failures", pol, pe.eager, r.Runs, r.WrongReads, r.Failures()-r.WrongReads)
				if (!r.Complete && opt.Limit == 0 && !opt.StopAtFailure) || r.Runs == 0 {
					t.Fatalf("%v: enumeration incomplete after %d runs", pol, r.Runs)
				}
				switch {
				case pol.Safe() && r.Failures() > 0:
					t.Fatalf("%v failed %d of %d interleavings:\n%s", pol, r.Failures(), r.Runs, r.First.Report())
				case !pol.Safe() && sc.Hazard && r.WrongReads == 0:
					t.Fatalf("%v was not caught in %d interleavings", pol, r.Runs)
				case !pol.Safe() && !sc.Hazard && r.Failures() > 0:
					t.Fatalf("%v flagged on a scenario without a hazard:\n%s", pol, r.First.Report())
				case !pol.Safe() && r.Failures() != r.WrongReads:
					t.Fatalf("%v failed otherwise than by wrong reads:\n%s", pol, r.First.Report())
				}
			}
		})
	}
}

type policyEager struct {
	pol   subarena.Policy
	eager bool
}

func policiesTimesEager() []policyEager {
	var out []policyEager
	for _, eager := range []bool{false, true} {
		for _, pol := range subarena.Policies() {
			out = append(out, policyEager{pol, eager})
		}
	}
	return out
}

// TestCounterexampleReport checks that a caught ir-order run names the
// reader, its view chain, the expected writer and the overwriter, and that
// its recorded choices replay it exactly.
func TestCounterexampleReport(t *testing.T) {
	sc := Scenarios()[0] // view-chain
	r := Explore(sc.Program, subarena.IROrder, ExploreOptions{StopAtFailure: true})
	f := r.First
	if f == nil || f.Kind != FailWrongRead || f.Wrong == nil {
		t.Fatalf("no wrong read: %+v", r)
	}
	rep := f.Report()
	for _, want := range []string{"through v", "permute", "expected the write of o0", "found the write of o2", "interleaving:", "b0 = alloc 64"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	again := Run(sc.Program, subarena.IROrder, &ReplayScheduler{Choices: f.Choices})
	if again.Failure == nil || again.Failure.Detail != f.Detail {
		t.Fatalf("replay gave %v, want %q", again.Failure, f.Detail)
	}
}

// TestExhaustiveSmall enumerates every interleaving of small generated
// programs under the four safe policies (a smoke version of
// TestExhaustiveLong).
func TestExhaustiveSmall(t *testing.T) {
	cfg := SmallConfig()
	cfg.Ops = 4
	c := Campaign{Gen: cfg, Policies: subarena.SafePolicies(), Programs: 12, Seed: 1000, Exhaustive: true, Eager: true, Limit: 20_000, Workers: 2}
	if invariants.RaceEnabled {
		c.Programs, c.Limit = 2, 500
	}
	s := c.Run()
	t.Log(s)
	checkSummary(t, s, false)
	if s.Orders || !strings.Contains(s.String(), " interleavings of one program") {
		t.Fatalf("summary of an interleaving enumeration: %q", s.String())
	}
	c.Orders, c.Programs = true, 2
	if s = c.Run(); !s.Orders || !strings.Contains(s.String(), " completion orders of one program") {
		t.Fatalf("summary of a completion-order enumeration: %q", s.String())
	}
	checkSummary(t, s, false)
}

// TestRandomSmoke runs random programs with random interleavings under
// every policy: the safe ones must pass every check, ir-order must be
// caught.
func TestRandomSmoke(t *testing.T) {
	c := Campaign{Gen: DefaultConfig(), Policies: subarena.Policies(), Programs: 150, Seed: 1, Workers: 2}
	if invariants.RaceEnabled {
		c.Programs = 20
	}
	s := c.Run()
	t.Log(s)
	checkSummary(t, s, true)
}

// checkSummary fails on any failure of a safe policy; with wantCaught,
// ir-order must have been caught by wrong reads.
func checkSummary(t *testing.T, s Summary, wantCaught bool) {
	t.Helper()
	for _, pol := range s.Policies {
		tl := s.Tallies[pol]
		if pol.Safe() && tl.Failures() > 0 {
			t.Errorf("%v: %d failed runs; first:\n%s", pol, tl.Failures(), tl.First.Report())
		}
		if !pol.Safe() && wantCaught && tl.WrongReads == 0 {
			t.Errorf("%v: no wrong read in %d runs", pol, tl.Runs)
		}
	}
}

// TestCheckerCatchesCorruption proves the checks can fail: a byte of the
// backing overwritten behind the Allocator's back is caught by the
// invariant check, and a byte overwritten consistently (stamp and memory,
// as another op would) by the reader.
func TestCheckerCatchesCorruption(t *testing.T) {
	p := Scenarios()[2].Program // qkv-slow-copy: byte 5 of QKV is in Q, read by attention
	want := map[string]FailKind{"memory": FailOracle, "stamp and memory": FailWrongRead}
	for _, corrupt := range []string{"memory", "stamp and memory"} {
		s, err := NewSim(p, subarena.SubrangeFenced, &ReplayScheduler{})
		if err != nil {
			t.Fatal(err)
		}
		// Run until the first op has completed, then corrupt a byte it wrote.
		for s.Step() && s.res.Completions == 0 {
		}
		if s.res.Failure != nil {
			t.Fatal(s.res.Failure.Report())
		}
		addr := s.bufs[0].off + 5
		if corrupt == "memory" {
			s.mem[addr] ^= 0x5a
		} else {
			s.stamp[addr] = 2
			s.mem[addr] = stampByte(1, addr)
		}
		for s.Step() {
		}
		s.Close()
		f := s.Result().Failure
		if f == nil || f.Kind != want[corrupt] {
			t.Fatalf("%s corruption at arena byte %d: got %v, want a failure of kind %v", corrupt, addr, f, want[corrupt])
		}
		t.Logf("%s corruption: %v", corrupt, f)
	}
}

// TestValidateRejects checks that Validate refuses racy and dangling
// programs.
func TestValidateRejects(t *testing.T) {
	racy := NewBuilder("racy", 2, 64, 16)
	a := racy.Alloc(32, 0)
	racy.Op(0, nil, W(racy.Whole(a)))
	racy.Op(1, nil, R(racy.Whole(a))) // not ordered after the write
	racy.Release(a)
	dangling := NewBuilder("dangling", 1, 64, 16)
	b := dangling.Alloc(32, 0)
	v := dangling.Whole(b)
	dangling.Release(b)
	dangling.Op(0, nil, W(v))
	for _, bl := range []*Builder{racy, dangling} {
		if _, err := bl.Program(); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", bl.p.Name, err)
		}
	}
}

// TestRunDeterministic checks that a run is a function of the program and
// the scheduler's decisions.
func TestRunDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		p := Generate(NewRand(seed), DefaultConfig())
		a := Run(p, subarena.SubrangeFenced, NewRandomScheduler(NewRand(seed)))
		b := Run(p, subarena.SubrangeFenced, NewRandomScheduler(NewRand(seed)))
		if a.Failure != nil || b.Failure != nil {
			t.Fatalf("seed %d: %v / %v", seed, a.Failure, b.Failure)
		}
		a.Failure, b.Failure = nil, nil
		if a != b {
			t.Fatalf("seed %d: runs differ: %+v vs %+v", seed, a, b)
		}
	}
}

// TestEagerHostLosesNothing checks the claim behind RunOptions.EagerHost on
// small programs: the outcomes an exhaustive enumeration reaches — where
// every buffer was placed, and whether the run failed and how — are the
// same with and without eager host steps.
func TestEagerHostLosesNothing(t *testing.T) {
	cfg := SmallConfig()
	cfg.Ops = 4
	outcomes := func(p *Program, pol subarena.Policy, eager bool) map[[2]uint64]bool {
		set := map[[2]uint64]bool{}
		d := &dfsScheduler{}
		for {
			r := RunWith(p, pol, d, RunOptions{EagerHost: eager})
			kind := uint64(0)
			if r.Failure != nil {
				kind = uint64(r.Failure.Kind)
			}
			set[[2]uint64{r.placements, kind}] = true
			if !d.next() {
				return set
			}
		}
	}
	total, seeds := 0, uint64(6)
	if invariants.RaceEnabled {
		seeds, cfg.Ops = 2, 3
	}
	for seed := uint64(0); seed < seeds; seed++ {
		p := Generate(NewRand(seed), cfg)
		for _, pol := range []subarena.Policy{subarena.IROrder, subarena.SubrangeFenced, subarena.WholeFenced} {
			full, eager := outcomes(p, pol, false), outcomes(p, pol, true)
			total += len(full)
			if len(full) != len(eager) {
				t.Fatalf("seed %d %v: %d outcomes in full enumeration, %d with eager host steps\n%v", seed, pol, len(full), len(eager), p)
			}
			for o := range full {
				if !eager[o] {
					t.Fatalf("seed %d %v: outcome %v lost with eager host steps", seed, pol, o)
				}
			}
		}
	}
	t.Logf("%d distinct outcomes, all reached with eager host steps", total)
}

// TestRunMalformedNoPanic corrupts one field of generated programs at
// random: Run must report ErrMalformed (or run the program, if it is still
// well-formed), never panic.
func TestRunMalformedNoPanic(t *testing.T) {
	src := NewRand(99)
	bad := 0
	for i := 0; i < 400; i++ {
		p := Generate(NewRand(uint64(i)), SmallConfig())
		s := &p.Steps[src.Intn(len(p.Steps))]
		delta := between(src, -3, 3)
		switch src.Intn(8) {
		case 0:
			s.Buf += delta
		case 1:
			s.View += delta
		case 2:
			s.Op += delta
		case 3:
			s.Res += delta
		case 4:
			s.Engine += delta
		case 5:
			s.Size += int64(delta)
		case 6:
			if len(s.Waits) > 0 {
				s.Waits[0] += delta
			} else if len(s.Uses) > 0 {
				s.Uses[0].View += delta
			}
		default:
			s.Kind = StepKind(src.Intn(12))
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("program %d: panic %v\n%v", i, r, p)
				}
			}()
			r := Run(p, subarena.SubrangeFenced, NewRandomScheduler(src))
			if r.Failure != nil {
				if r.Failure.Kind != FailSetup || !strings.Contains(r.Failure.Detail, ErrMalformed.Error()) {
					t.Fatalf("program %d: %v", i, r.Failure.Report())
				}
				bad++
			}
		}()
	}
	t.Logf("%d of 400 corrupted programs rejected as malformed", bad)
}
