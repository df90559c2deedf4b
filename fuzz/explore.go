package fuzz

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subarena/subarena"
)

// Tally counts what runs of one policy found.
type Tally struct {
	Runs            int   // interleavings run
	WrongReads      int   // runs that read a wrong version
	InvariantBreaks int   // runs where a CheckInvariants failed
	RuleBreaks      int   // runs where the reuse rule was broken without a wrong read
	OracleFailures  int   // runs where the Allocator disagreed with the model
	Errors          int   // runs where a call failed unexpectedly
	Stuck           int   // runs that ran out of space with nothing pending
	Rejected        int   // uses rejected with ErrUnordered
	Waits           int   // host retries after ErrNoSpace / ErrPending
	Reads           int64 // byte reads checked against their expected writer
	WaitReuse       int   // allocs that took bytes still pending (RunOptions.MayWait)
	First           *Failure
}

// Failures returns the number of failed runs.
func (t *Tally) Failures() int {
	return t.WrongReads + t.InvariantBreaks + t.RuleBreaks + t.OracleFailures + t.Errors
}

func (t *Tally) add(r *Result) {
	t.Runs++
	t.Rejected += r.Rejected
	t.Waits += r.Waits
	t.Reads += int64(r.Reads)
	t.WaitReuse += r.WaitReuse
	if r.Stuck {
		t.Stuck++
	}
	f := r.Failure
	if f == nil {
		return
	}
	switch f.Kind {
	case FailWrongRead:
		t.WrongReads++
	case FailInvariant:
		t.InvariantBreaks++
	case FailRule:
		t.RuleBreaks++
	case FailOracle:
		t.OracleFailures++
	default:
		t.Errors++
	}
	if t.First == nil {
		t.First = f
	}
}

func (t *Tally) merge(o *Tally) {
	first := t.First
	*t = Tally{
		Runs: t.Runs + o.Runs, WrongReads: t.WrongReads + o.WrongReads, InvariantBreaks: t.InvariantBreaks + o.InvariantBreaks,
		RuleBreaks: t.RuleBreaks + o.RuleBreaks, OracleFailures: t.OracleFailures + o.OracleFailures, Errors: t.Errors + o.Errors,
		Stuck: t.Stuck + o.Stuck, Rejected: t.Rejected + o.Rejected, Waits: t.Waits + o.Waits, Reads: t.Reads + o.Reads,
		WaitReuse: t.WaitReuse + o.WaitReuse, First: first,
	}
	if t.First == nil {
		t.First = o.First
	}
}

// ExploreResult is what an exhaustive enumeration found.
type ExploreResult struct {
	Tally
	Complete bool // every interleaving was run (the limit was not reached)
}

// ExploreOptions tune an exhaustive enumeration.
type ExploreOptions struct {
	Limit         int  // stop after this many runs (0: no limit)
	Eager         bool // run Submit and HostSync steps as soon as they are next (RunOptions.EagerHost)
	StopAtFailure bool // stop at the first failed run

	// Orders enumerates completion orders rather than interleavings: the
	// host takes each step as soon as it can (RunOptions.HostFirst) and the
	// only branch is which ready op completes next. Each run is a distinct
	// completion order, with the timing where every host call sees as few
	// completions as the order allows. For a program whose host never has
	// to wait (for space, or for a donation's bytes) these are exactly the
	// orders consistent with FIFO engines, waits and host syncs. A host
	// that waits submits the ops after the wait only once the completions
	// that end it (in host-first timing) are done; orders that only another
	// placement history would allow — an earlier host call delayed, placed
	// elsewhere, leaving room sooner — need Delays. An 8-op program on 3
	// engines has at most 8!/(3!·3!·2!) = 560 orders, against the millions
	// of interleavings the full enumeration may face.
	Orders bool
	// Delays, with Orders, widens the enumeration to every interleaving
	// that deviates from host-first at most Delays times, a deviation being
	// an op completing while the host could have taken its next step (with
	// Eager, Submit and HostSync steps are never overtaken: that would
	// change nothing). Every completion order is still reached, and each
	// delay lets one host call — an Alloc, Release, Donate, Claim, Reserve,
	// Cancel or Discard — see one more completion than host-first shows it:
	// Delays = 1 covers every single early completion, Delays = 2 every
	// pair. Without a bound (the default mode) it is every interleaving.
	Delays int
	// MayWait runs with RunOptions.MayWait.
	MayWait bool

	visit func(*Sim) // called with each finished run
}

// Explore runs p under policy in every interleaving the program allows —
// every order of host steps and completions consistent with FIFO engines,
// waits and host syncs — depth first; or, with opt.Orders, in every
// completion order (and up to opt.Delays deviations from host-first).
// Complete reports whether it got through them all.
func Explore(p *Program, policy subarena.Policy, opt ExploreOptions) ExploreResult {
	var out ExploreResult
	d := &dfsScheduler{bounded: opt.Orders && opt.Delays > 0, delays: opt.Delays}
	ro := RunOptions{EagerHost: opt.Eager, HostFirst: opt.Orders && opt.Delays <= 0, MayWait: opt.MayWait}
	for {
		ro.checkFrom = len(d.prefix)
		r := runWith(p, policy, d, ro, opt.visit)
		out.add(&r)
		if !d.next() {
			out.Complete = true
			return out
		}
		if (opt.Limit > 0 && out.Runs >= opt.Limit) || (opt.StopAtFailure && r.Failure != nil) {
			return out
		}
	}
}

// Campaign runs many generated programs under several policies.
type Campaign struct {
	Gen      GenConfig
	Policies []subarena.Policy
	Programs int    // programs to generate
	Seed     uint64 // program i is generated from Seed+i
	// Exhaustive enumerates every interleaving of each program (up to Limit
	// per program and policy); otherwise each program runs Schedules random
	// interleavings (at least one) per policy.
	Exhaustive bool
	Limit      int
	Eager      bool // exhaustive: RunOptions.EagerHost
	Orders     bool // exhaustive: every completion order (ExploreOptions.Orders)
	Delays     int  // exhaustive, with Orders: ExploreOptions.Delays
	Schedules  int
	MayWait    bool               // RunOptions.MayWait
	Workers    int                // goroutines (at least one)
	Progress   func(programs int) // called now and then with the programs done
}

// Summary is what a campaign found, per policy.
type Summary struct {
	Programs         int
	Runs             int
	Truncated        int  // exhaustive: enumerations that hit the limit
	MaxInterleavings int  // exhaustive: the most interleavings of one program under one policy
	Orders           bool // exhaustive: the interleavings were completion orders (Campaign.Orders)
	Policies         []subarena.Policy
	Tallies          map[subarena.Policy]*Tally
	Elapsed          time.Duration
}

// ProgramSeed returns the seed program i of a campaign is generated from.
func (c *Campaign) ProgramSeed(i int) uint64 { return c.Seed + uint64(i) }

// Run runs the campaign.
func (c *Campaign) Run() Summary {
	start := time.Now()
	workers := max(c.Workers, 1)
	sum := Summary{Policies: c.Policies, Tallies: map[subarena.Policy]*Tally{}, Orders: c.Exhaustive && c.Orders}
	for _, pol := range c.Policies {
		sum.Tallies[pol] = &Tally{}
	}
	var mu sync.Mutex
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := map[subarena.Policy]*Tally{}
			for _, pol := range c.Policies {
				local[pol] = &Tally{}
			}
			var truncated, most int
			for {
				i := int(next.Add(1) - 1)
				if i >= c.Programs {
					break
				}
				seed := c.ProgramSeed(i)
				p := Generate(NewRand(seed), c.Gen)
				p.Name = fmt.Sprintf("seed %d", seed)
				for pi, pol := range c.Policies {
					if c.Exhaustive {
						r := Explore(p, pol, ExploreOptions{Limit: c.Limit, Eager: c.Eager, Orders: c.Orders, Delays: c.Delays, MayWait: c.MayWait})
						local[pol].merge(&r.Tally)
						most = max(most, r.Runs)
						if !r.Complete {
							truncated++
						}
						continue
					}
					for k := 0; k < max(c.Schedules, 1); k++ {
						sched := NewRandomScheduler(NewRand(seed*31 + uint64(pi*1000+k) + 7))
						r := RunWith(p, pol, sched, RunOptions{MayWait: c.MayWait})
						local[pol].add(&r)
					}
				}
				if n := done.Add(1); c.Progress != nil && n%1000 == 0 {
					c.Progress(int(n))
				}
			}
			mu.Lock()
			for pol, t := range local {
				sum.Tallies[pol].merge(t)
			}
			sum.Truncated += truncated
			sum.MaxInterleavings = max(sum.MaxInterleavings, most)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sum.Programs = int(done.Load())
	for _, t := range sum.Tallies {
		sum.Runs += t.Runs
	}
	sum.Elapsed = time.Since(start)
	return sum
}

// String formats the summary as a table, one policy a line.
func (s Summary) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d programs, %d runs in %v", s.Programs, s.Runs, s.Elapsed.Round(time.Millisecond))
	if s.MaxInterleavings > 0 {
		what := "interleavings"
		if s.Orders {
			what = "completion orders"
		}
		fmt.Fprintf(&sb, " (at most %d %s of one program under one policy, %d enumerations truncated)", s.MaxInterleavings, what, s.Truncated)
	}
	fmt.Fprintf(&sb, "\n%-22s %10s %8s %8s %8s %8s %8s %8s %9s %9s %12s\n", "policy", "runs", "wrong", "invar", "rule", "oracle", "errors", "stuck", "rejected", "waits", "bytes read")
	for _, pol := range s.Policies {
		t := s.Tallies[pol]
		fmt.Fprintf(&sb, "%-22v %10d %8d %8d %8d %8d %8d %8d %9d %9d %12d\n", pol, t.Runs, t.WrongReads, t.InvariantBreaks, t.RuleBreaks, t.OracleFailures, t.Errors, t.Stuck, t.Rejected, t.Waits, t.Reads)
	}
	for _, pol := range s.Policies {
		if t := s.Tallies[pol]; t.WaitReuse > 0 {
			fmt.Fprintf(&sb, "%-22v %d allocs took bytes still pending, their ops waiting (MayWait)\n", pol, t.WaitReuse)
		}
	}
	return sb.String()
}
