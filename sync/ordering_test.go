package sync

import (
	"errors"
	"testing"
)

// TestSafeUnder: the reuse rule on clocks, component by component.
func TestSafeUnder(t *testing.T) {
	fence := Clock{3, 2}
	cases := []struct {
		name          string
		at, completed Clock
		want          bool
	}{
		{"nothing known", Clock{}, Clock{}, false},
		{"ordered after all", Clock{3, 2}, Clock{}, true},
		{"completed all", Clock{}, Clock{5, 2}, true},
		{"mixed: e0 ordered, e1 completed", Clock{3, 0}, Clock{0, 2}, true},
		{"e1 neither", Clock{3, 1}, Clock{2, 1}, false},
		{"e0 short by one", Clock{2, 9}, Clock{2, 9}, false},
	}
	for _, c := range cases {
		if got := fence.SafeUnder(&c.at, &c.completed); got != c.want {
			t.Errorf("%s: SafeUnder(%v, %v) = %v, want %v", c.name, c.at, c.completed, got, c.want)
		}
	}
	var nilFence *Clock
	if !nilFence.SafeUnder(nil, nil) {
		t.Error("a nil fence covers nothing: safe under anything")
	}
	if fence.SafeUnder(nil, nil) {
		t.Error("a non-empty fence is not safe under nothing")
	}
}

// TestOrderedAfterForgotten: an op ordered after a fence's component only
// through a forgotten op is still ordered after it; an op that is not
// ordered stays refused even once the component has completed (it may have
// started before).
func TestOrderedAfterForgotten(t *testing.T) {
	tl := NewTimeline()
	e0, _ := tl.AddEngine("compute", Compute)
	e1, _ := tl.AddEngine("copy", Copy)
	e2, _ := tl.AddEngine("host", Host)
	r, _ := tl.Submit(e1)
	x, _ := tl.Submit(e0, r)
	last, _ := tl.Submit(e0)
	fence := Clock{}
	fence.Observe(r)

	early, _ := tl.Submit(e2) // not ordered after r
	if ok, err := tl.OrderedAfter(&fence, early); err != nil || ok {
		t.Fatalf("unordered op: got %v, %v; want false", ok, err)
	}
	mustComplete(t, tl, last)
	tl.Forget()
	if tl.Forgotten(e0) < x.Seq {
		t.Fatalf("x not forgotten: floor %d", tl.Forgotten(e0))
	}
	y, _ := tl.Submit(e2, x)
	if ok, err := tl.OrderedAfter(&fence, y); err != nil || !ok {
		t.Fatalf("op after forgotten x, r completed: got %v, %v; want true", ok, err)
	}
	if ok, err := tl.OrderedAfter(&fence, early); err != nil || ok {
		t.Fatalf("op submitted before r completed, unordered: got %v, %v; want false", ok, err)
	}
	if _, err := tl.OrderedAfter(&fence, Event{Engine: e2, Seq: 99}); !errors.Is(err, ErrUnknownEvent) {
		t.Fatalf("unknown event: %v", err)
	}
}

// TestCheckPoint: truthful points (current or older) pass; points claiming
// more than the engine's next op is ordered after, or from another
// Timeline, fail with ErrInvalidPoint; an unknown engine with
// ErrUnknownEngine.
func TestCheckPoint(t *testing.T) {
	tl := NewTimeline()
	e0, _ := tl.AddEngine("compute", Compute)
	e1, _ := tl.AddEngine("copy", Copy)
	old, _ := tl.Point(e0)
	c, _ := tl.Submit(e1)
	if _, err := tl.Submit(e0, c); err != nil {
		t.Fatal(err)
	}
	unwaited, _ := tl.Submit(e1)
	now, _ := tl.Point(e0)
	for _, p := range []Point{old, now, {Engine: e1}} {
		if err := tl.CheckPoint(p); err != nil {
			t.Errorf("truthful point %v: %v", p, err)
		}
	}
	forged := now
	forged.Clock.Observe(unwaited)
	beyond := now
	beyond.Clock[e0] = 50
	for _, p := range []Point{forged, beyond} {
		if err := tl.CheckPoint(p); !errors.Is(err, ErrInvalidPoint) {
			t.Errorf("forged point %v: %v", p, err)
		}
	}
	if err := tl.CheckPoint(Point{Engine: 7}); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("unknown engine: %v", err)
	}
}
