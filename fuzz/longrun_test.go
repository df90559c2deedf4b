package fuzz

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/subarena/subarena"
)

var longRun = flag.Bool("long", false, "run TestRandomLong (10^6 programs), TestExhaustiveLong (every interleaving of 120 programs of 3 to 8 ops) and TestExhaustiveOrdersLong (every completion order of 60000 programs of 3 to 8 ops)")

// envInt reads a positive integer from the environment, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestRandomLong is the long random campaign:
//
//	go test ./fuzz -run TestRandomLong -long -timeout 0 -v
//	SUBARENA_FUZZ_PROGRAMS=1000000 go test ./fuzz -run TestRandomLong -timeout 0 -v
//
// Each program runs once under every policy with its own random
// interleaving; the safe policies must pass every check, ir-order must be
// caught. SUBARENA_FUZZ_SEED and SUBARENA_FUZZ_WORKERS tune it.
func TestRandomLong(t *testing.T) {
	n := longCount(t, "SUBARENA_FUZZ_PROGRAMS", 1_000_000)
	c := Campaign{
		Gen: DefaultConfig(), Policies: subarena.Policies(), Programs: n,
		Seed:    uint64(envInt("SUBARENA_FUZZ_SEED", 1)),
		Workers: envInt("SUBARENA_FUZZ_WORKERS", runtime.GOMAXPROCS(0)),
		Progress: func(done int) {
			if done%50_000 == 0 {
				t.Logf("%d programs", done)
			}
		},
	}
	s := c.Run()
	t.Log(s)
	checkSummary(t, s, true)
}

// TestExhaustiveLong enumerates every interleaving of generated programs of
// 3 to 8 ops on 2 or 3 engines, under the four safe policies:
//
//	go test ./fuzz -run TestExhaustiveLong -long -timeout 0 -v
//	SUBARENA_FUZZ_EXHAUSTIVE=120 go test ./fuzz -run TestExhaustiveLong -timeout 0 -v
//
// SUBARENA_FUZZ_EXHAUSTIVE programs (default 120 with -long) are split evenly
// over the op counts SUBARENA_FUZZ_MINOPS to SUBARENA_FUZZ_MAXOPS (default 3
// to 8); SUBARENA_FUZZ_LIMIT caps the interleavings of one program under one
// policy (default 2·10^6; truncated enumerations are counted). Submit and
// HostSync steps run eagerly (RunOptions.EagerHost) unless
// SUBARENA_FUZZ_EAGER=0.
func TestExhaustiveLong(t *testing.T) {
	n := longCount(t, "SUBARENA_FUZZ_EXHAUSTIVE", 120)
	exhaustiveByOps(t, n, Campaign{Policies: subarena.SafePolicies()}, "")
}

// longCount returns how many programs a long test runs: the environment
// variable name's value, or def under -long. It skips t when neither is
// set.
func longCount(t *testing.T, name string, def int) int {
	t.Helper()
	n := envInt(name, 0)
	if n == 0 && *longRun {
		n = def
	}
	if n == 0 {
		t.Skip("set -long or " + name)
	}
	return n
}

// exhaustiveByOps runs the exhaustive campaign base (its policies, Orders
// and Delays) over n programs split evenly across the op counts
// SUBARENA_FUZZ_MINOPS to SUBARENA_FUZZ_MAXOPS, one campaign per count,
// with the limit, workers, seed and eagerness the environment gives. Every
// summary must pass checkSummary.
func exhaustiveByOps(t *testing.T, n int, base Campaign, what string) {
	t.Helper()
	limit := envInt("SUBARENA_FUZZ_LIMIT", 2_000_000)
	workers := envInt("SUBARENA_FUZZ_WORKERS", runtime.GOMAXPROCS(0))
	seed := uint64(envInt("SUBARENA_FUZZ_SEED", 1))
	lo, hi := envInt("SUBARENA_FUZZ_MINOPS", 3), envInt("SUBARENA_FUZZ_MAXOPS", 8)
	eager := os.Getenv("SUBARENA_FUZZ_EAGER") != "0"
	for ops := lo; ops <= hi; ops++ {
		c := base
		c.Gen = SmallConfig()
		c.Gen.Ops = ops
		c.Programs, c.Seed = (n+hi-lo)/(hi-lo+1), seed+uint64(ops)<<32
		c.Exhaustive, c.Eager, c.Limit, c.Workers = true, eager, limit, workers
		s := c.Run()
		t.Logf("%d-op programs%s: %v", ops, what, s)
		checkSummary(t, s, false)
	}
}

// TestExhaustiveOrdersLong runs generated programs of 3 to 8 ops on 2 or 3
// engines in every completion order (ExploreOptions.Orders), under the four
// safe policies and ir-order:
//
//	go test ./fuzz -run TestExhaustiveOrdersLong -long -timeout 0 -v
//	SUBARENA_FUZZ_ORDERS=60000 go test ./fuzz -run TestExhaustiveOrdersLong -timeout 0 -v
//
// SUBARENA_FUZZ_ORDERS programs (default 60000 with -long) are split evenly
// over the op counts SUBARENA_FUZZ_MINOPS to SUBARENA_FUZZ_MAXOPS (default 3
// to 8); SUBARENA_FUZZ_DELAYS widens each enumeration to the runs that
// deviate from host-first at most that many times (ExploreOptions.Delays;
// default 0, Submit and HostSync steps eager unless SUBARENA_FUZZ_EAGER=0);
// SUBARENA_FUZZ_LIMIT caps the runs of one program under one policy
// (default 2·10^6; truncated enumerations are counted). The safe policies
// must pass every check; how often ir-order is caught is logged.
func TestExhaustiveOrdersLong(t *testing.T) {
	n := longCount(t, "SUBARENA_FUZZ_ORDERS", 60000)
	delays := envInt("SUBARENA_FUZZ_DELAYS", 0)
	base := Campaign{Policies: append(subarena.SafePolicies(), subarena.IROrder), Orders: true, Delays: delays}
	exhaustiveByOps(t, n, base, fmt.Sprintf(", every completion order with %d delays", delays))
}
