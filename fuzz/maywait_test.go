package fuzz

import (
	"testing"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/invariants"
)

// TestMayWaitSmoke runs random programs with MayWait: the fenced policies
// take held bytes whose users are still pending on other engines, the ops
// using them wait for those users, and every read must still see its
// writer. The campaign must have taken pending bytes (or it tested
// nothing new).
func TestMayWaitSmoke(t *testing.T) {
	c := Campaign{Gen: DefaultConfig(), Policies: subarena.SafePolicies(), Programs: 150, Seed: 77, Workers: 2, MayWait: true, Schedules: 2}
	if invariants.RaceEnabled {
		c.Programs = 20
	}
	s := c.Run()
	t.Log(s)
	checkSummary(t, s, false)
	for _, pol := range []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced} {
		if s.Tallies[pol].WaitReuse == 0 {
			t.Errorf("%v: no alloc took pending bytes in %d runs", pol, s.Tallies[pol].Runs)
		}
	}
	for _, pol := range []subarena.Policy{subarena.SubrangeAfterUsers, subarena.WholeAfterUsers} {
		if n := s.Tallies[pol].WaitReuse; n != 0 {
			t.Errorf("%v: %d allocs took pending bytes; the after-users policies never do", pol, n)
		}
	}
}

// TestMayWaitExhaustive enumerates every interleaving of small programs
// with MayWait under the fenced policies.
func TestMayWaitExhaustive(t *testing.T) {
	c := Campaign{Gen: SmallConfig(), Policies: []subarena.Policy{subarena.SubrangeFenced, subarena.WholeFenced},
		Programs: 12, Seed: 5, Exhaustive: true, Eager: true, Limit: 4000, Workers: 2, MayWait: true}
	if invariants.RaceEnabled {
		c.Programs, c.Limit = 4, 1000
	}
	s := c.Run()
	t.Log(s)
	checkSummary(t, s, false)
}

// TestMayWaitWithoutWaitsIsCaught proves the MayWait checks can fail: the
// same programs run with MayWait but with the ops submitted without the
// buffers' waits must be refused by Use (ErrUnordered) or caught.
func TestMayWaitWithoutWaitsIsCaught(t *testing.T) {
	rejected := 0
	for seed := uint64(0); seed < 200 && rejected == 0; seed++ {
		p := Generate(NewRand(seed), DefaultConfig())
		s, err := NewSim(p, subarena.SubrangeFenced, NewRandomScheduler(NewRand(seed)))
		if err != nil {
			t.Fatal(err)
		}
		s.opt = RunOptions{MayWait: true}
		s.skipResidueWaits = true
		for s.Step() {
		}
		s.Close()
		r := s.Result()
		if r.Failure != nil {
			t.Fatalf("seed %d: %s", seed, r.Failure.Report())
		}
		if r.WaitReuse > 0 {
			rejected += r.Rejected
		}
	}
	if rejected == 0 {
		t.Fatal("no use of bytes taken before their users completed was refused without the waits")
	}
}
