package fuzz

import (
	"errors"
	"testing"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Regression tests for Allocator bugs the simulator found, each reduced to
// the fewest calls that showed it.

// TestActivateUnordered: activating a reservation applies the rule Use
// applies to bytes taken over fenced. Bytes still read by r on e1 go fenced
// to a buffer allocated at e1's point; an op x on e0, not ordered after r,
// must not activate a reservation on them (the simulator found this).
func TestActivateUnordered(t *testing.T) {
	tl := sasync.NewTimeline()
	e0, _ := tl.AddEngine("e0", sasync.Compute)
	e1, _ := tl.AddEngine("e1", sasync.Compute)
	a, err := subarena.New(subarena.Config{Capacity: 256, Granule: 256, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	p0, _ := tl.Point(e0)
	old, _ := a.Alloc(256, p0)
	w, _ := tl.Submit(e0)
	_ = a.UseBuffer(old, w, subarena.Write)
	r, _ := tl.Submit(e1, w)
	_ = a.UseBuffer(old, r, subarena.Read)
	_ = a.Release(old)
	p1, _ := tl.Point(e1)
	b, err := a.Alloc(256, p1) // takes old's bytes, fenced by r
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Reserve(b.Whole())
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tl.Submit(e0) // not ordered after r
	if err := a.UseBuffer(b, x, subarena.Write); !errors.Is(err, subarena.ErrUnordered) {
		t.Fatalf("Use: got %v, want ErrUnordered", err)
	}
	if err := res.Activate(x, subarena.Write); !errors.Is(err, subarena.ErrUnordered) {
		t.Fatalf("Activate: got %v, want ErrUnordered like Use", err)
	}
}

// TestActivateUnorderedSimulated is the same situation as a program: no
// interleaving may read a wrong version, and the activation is rejected.
func TestActivateUnorderedSimulated(t *testing.T) {
	b := NewBuilder("activate-unordered", 2, 64, 16)
	old := b.Alloc(64, 0)
	oldAll := b.Whole(old)
	w := b.Op(0, nil, W(oldAll))
	b.Op(1, []int{w}, R(oldAll))
	b.Release(old)
	nb := b.Alloc(64, 1)
	nbAll := b.Whole(nb)
	res := b.Reserve(nbAll)
	b.Op(0, nil, Reserved(W(nbAll), res))
	b.Release(nb)
	exploreSafe(t, b, func(pol subarena.Policy, r ExploreResult) {
		if pol == subarena.SubrangeFenced && r.Rejected == 0 {
			t.Errorf("%v: the unordered activation was never rejected in %d interleavings", pol, r.Runs)
		}
	})
}

// TestWholeFencedTakeAcrossRuns: under whole-fenced, an allocation that
// spans several safe runs of one released piece must take them together.
// Taken one at a time (as FuzzAllocator found), taking the first let the
// rest of the piece return to the arena while the new buffer already held
// it: the next take failed and the arena counted the new buffer's bytes as
// free.
func TestWholeFencedTakeAcrossRuns(t *testing.T) {
	tl := sasync.NewTimeline()
	e0, _ := tl.AddEngine("e0", sasync.Compute)
	a, err := subarena.New(subarena.Config{Capacity: 4, Granule: 1, Timeline: tl, Policy: subarena.WholeFenced})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tl.Point(e0)
	old, _ := a.Alloc(4, p)
	u, _ := tl.Submit(e0)
	first, _ := old.View(strided.Bytes(0, 1))
	_ = a.Use(first, u, subarena.Read) // u pins byte 0 only
	middle, _ := old.View(strided.Bytes(1, 1))
	if err := a.Discard(middle); err != nil { // byte 1 returns clean
		t.Fatal(err)
	}
	_ = a.Release(old)  // the piece {[0,1), [2,4)} waits for u
	p, _ = tl.Point(e0) // ordered after u: the piece is safe
	nb, err := a.Alloc(4, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CheckInvariants(); err != nil {
		t.Fatalf("after Alloc of %v: %v", nb, err)
	}
	if _, err := a.Alloc(1, p); !errors.Is(err, subarena.ErrNoSpace) {
		t.Fatalf("a second buffer fits in a full arena: %v", err)
	}
}

// TestNoSpaceWaitNamesEvent: a NoSpaceError built while a completion is on
// its way to the Allocator (the Timeline has recorded it, the Allocator's
// subscriber has not run yet) must not say HasWait with the zero event,
// which a host cannot wait for (the stress test met this).
func TestNoSpaceWaitNamesEvent(t *testing.T) {
	tl := sasync.NewTimeline()
	e0, _ := tl.AddEngine("e0", sasync.Compute)
	var a *subarena.Allocator
	var seen error
	// Subscribed before the Allocator: runs first on each completion.
	tl.Subscribe(func(sasync.Clock) {
		if a != nil && seen == nil {
			p, _ := tl.Point(e0)
			_, seen = a.Alloc(256, p)
		}
	})
	a, _ = subarena.New(subarena.Config{Capacity: 256, Granule: 256, Timeline: tl, Policy: subarena.SubrangeAfterUsers})
	p, _ := tl.Point(e0)
	b, _ := a.Alloc(256, p)
	u, _ := tl.Submit(e0)
	_ = a.UseBuffer(b, u, subarena.Read)
	_ = a.Release(b)
	if err := tl.Complete(u); err != nil {
		t.Fatal(err)
	}
	var ns *subarena.NoSpaceError
	if errors.As(seen, &ns) && ns.HasWait && ns.Wait.Seq == 0 {
		t.Fatalf("NoSpaceError says HasWait but names no event: %v (%+v)", seen, *ns)
	}
}

// TestRefusedDonationOutOfSpace: a donation refused with ErrUnordered falls
// back to fresh bytes for the op's output; when the arena has none and
// nothing is pending, the host is stuck for want of space, as an Alloc would
// be, not because the allocator answered wrongly (the random campaign met
// this and reported it as a wrong answer).
func TestRefusedDonationOutOfSpace(t *testing.T) {
	b := NewBuilder("refused-donation-out-of-space", 2, 32, 1)
	old := b.Alloc(32, 0)
	b.Op(0, nil, W(b.Whole(old)))
	b.Release(old)
	taken := b.Alloc(32, 0) // old's bytes, fenced by the op on e0 under the fenced policies
	half := b.Dense(taken, 0, []int64{16}, 1)
	op := b.Op(1, nil, RW(half)) // not ordered after the fence
	out := b.Donate(half, op)
	b.Release(taken)
	b.Release(out)
	exploreSafe(t, b, func(pol subarena.Policy, r ExploreResult) {
		if pol == subarena.SubrangeFenced && r.Stuck == 0 {
			t.Errorf("%v: no interleaving of %d ran out of space after the refused donation", pol, r.Runs)
		}
	})
}

// exploreSafe explores b's program under every safe policy, fails the test
// if any interleaving fails, and hands each policy's result to check.
func exploreSafe(t *testing.T, b *Builder, check func(pol subarena.Policy, r ExploreResult)) {
	t.Helper()
	p, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range subarena.SafePolicies() {
		r := Explore(p, pol, ExploreOptions{})
		if r.Failures() > 0 {
			t.Fatalf("%v: %d of %d interleavings fail; first:\n%s", pol, r.Failures(), r.Runs, r.First.Report())
		}
		check(pol, r)
	}
}
