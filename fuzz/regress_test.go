package fuzz

import (
	"errors"
	"testing"

	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

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
	p, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range SafePolicies() {
		r := Explore(p, pol, ExploreOptions{})
		if r.Failures() > 0 {
			t.Fatalf("%v: %d of %d interleavings fail; first:\n%s", pol, r.Failures(), r.Runs, r.First.Report())
		}
		if pol == subarena.SubrangeFenced && r.Rejected == 0 {
			t.Errorf("%v: the unordered activation was never rejected in %d interleavings", pol, r.Runs)
		}
	}
}
