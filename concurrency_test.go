package subarena

import (
	"context"
	"errors"
	stdsync "sync"
	"testing"

	sasync "github.com/subarena/subarena/sync"
)

// TestClaimVersusAcquire is scenario 10: an eviction claim and a new user
// race for the same bytes, 10^4 times; never may both succeed.
func TestClaimVersusAcquire(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	tl := sasync.NewTimeline()
	e, _ := tl.AddEngine("compute", sasync.Compute)
	a, err := New(Config{Capacity: 1 << 16, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := tl.Point(e)
	b, err := a.Alloc(4096, pt)
	if err != nil {
		t.Fatal(err)
	}
	v := b.Whole()
	both, claims, uses := 0, 0, 0
	for i := 0; i < n; i++ {
		ev, _ := tl.Submit(e)
		var wg stdsync.WaitGroup
		var claim *Claim
		var claimErr, useErr error
		wg.Add(2)
		go func() { defer wg.Done(); claim, claimErr = a.Claim(v) }()
		go func() { defer wg.Done(); useErr = a.Use(v, ev, Read) }()
		wg.Wait()
		switch {
		case claimErr == nil && useErr == nil:
			both++
		case claimErr == nil:
			claims++
			if !errors.Is(useErr, ErrClaimed) {
				t.Fatalf("use lost to a claim with %v", useErr)
			}
		case useErr == nil:
			uses++
			if !errors.Is(claimErr, ErrPending) {
				t.Fatalf("claim lost to a use with %v", claimErr)
			}
		default:
			t.Fatalf("both failed: %v / %v", claimErr, useErr)
		}
		if claim != nil {
			if err := claim.Abandon(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tl.Complete(ev); err != nil {
			t.Fatal(err)
		}
		if i%512 == 0 {
			if err := a.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if both != 0 {
		t.Fatalf("claim and use both succeeded %d times", both)
	}
	t.Logf("claims won %d, uses won %d", claims, uses)
}

// TestConcurrentEngines runs ops on goroutine engines that complete from
// their own goroutines while the host allocates, uses and releases; the
// byte contents prove no reader saw a later owner's bytes.
func TestConcurrentEngines(t *testing.T) {
	tl := sasync.NewTimeline()
	const engines = 4
	var ids [engines]sasync.EngineID
	for i := range ids {
		ids[i], _ = tl.AddEngine([]string{"c0", "c1", "copy", "net"}[i], sasync.Compute)
	}
	capacity := int64(1 << 16)
	backing := make([]byte, capacity)
	a, err := New(Config{Capacity: capacity, Granule: 256, Timeline: tl, Backing: backing})
	if err != nil {
		t.Fatal(err)
	}
	x := sasync.NewExecutor(tl)
	x.Start(context.Background())
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	for i := 0; i < steps; i++ {
		e := ids[i%engines]
		pt, _ := tl.Point(e)
		size := int64(256 * (1 + i%7))
		b, err := a.Alloc(size, pt)
		for errors.Is(err, ErrNoSpace) {
			// Wait for the oldest work, then retry.
			var ns *NoSpaceError
			if errors.As(err, &ns) && ns.HasWait {
				_ = x.Wait(ns.Wait)
			} else {
				for _, id := range ids {
					if s := tl.Submitted(id); s > 0 {
						_ = x.Wait(sasync.Event{Engine: id, Seq: s})
					}
				}
			}
			pt, _ = tl.Point(e)
			b, err = a.Alloc(size, pt)
		}
		if err != nil {
			t.Fatal(err)
		}
		stamp := byte(i)
		mem := b.Bytes()
		w, err := x.Submit(e, nil, func(context.Context) error {
			for j := range mem {
				mem[j] = stamp
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.UseBuffer(b, w, Write); err != nil {
			t.Fatal(err)
		}
		re := ids[(i+1)%engines]
		var bad error
		r, err := x.Submit(re, []sasync.Event{w}, func(context.Context) error {
			for j := range mem {
				if mem[j] != stamp {
					bad = errors.New("reader saw another owner's bytes")
					return bad
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.UseBuffer(b, r, Read); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Users != 0 || st.Held != 0 {
		t.Fatalf("after all work: %d users pending, %d bytes held", st.Users, st.Held)
	}
}
