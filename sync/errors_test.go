package sync

import (
	"errors"
	"fmt"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
)

// TestErrors checks every bad input: the error matches its sentinels and
// the Timeline is exactly as it was.
func TestErrors(t *testing.T) {
	// Scenario: e0: a1 a2 a3 (a3 completed, so a1 a2 too); e1: b1 waits a2;
	// e2: nothing yet. e1#1 is pending.
	setup := func(tb testing.TB) *Timeline {
		tl := newEngines(tb, 3)
		mustSubmit(tb, tl, 0)
		a2 := mustSubmit(tb, tl, 0)
		a3 := mustSubmit(tb, tl, 0)
		b1 := mustSubmit(tb, tl, 1, a2)
		c1 := mustSubmit(tb, tl, 2, b1)
		mustComplete(tb, tl, a3)
		_ = c1
		return tl
	}
	full := func(tb testing.TB) *Timeline {
		tl := NewTimeline()
		for i := 0; i < MaxEngines; i++ {
			if _, err := tl.AddEngine(fmt.Sprint("q", i), Compute); err != nil {
				tb.Fatal(err)
			}
		}
		return tl
	}
	cases := []struct {
		name  string
		setup func(testing.TB) *Timeline
		call  func(*Timeline) error
		want  []error
	}{
		{"add duplicate engine", setup, func(tl *Timeline) error { _, err := tl.AddEngine("e1", Copy); return err }, []error{ErrDuplicateEngine}},
		{"add engine with empty name", setup, func(tl *Timeline) error { _, err := tl.AddEngine("", Copy); return err }, []error{ErrInvalidEngine}},
		{"add engine with bad kind", setup, func(tl *Timeline) error { _, err := tl.AddEngine("x", Kind(42)); return err }, []error{ErrInvalidEngine}},
		{"add a seventeenth engine", full, func(tl *Timeline) error { _, err := tl.AddEngine("extra", Host); return err }, []error{ErrTooManyEngines}},
		{"submit to unknown engine", setup, func(tl *Timeline) error { _, err := tl.Submit(3); return err }, []error{ErrUnknownEngine}},
		{"submit to engine 255", setup, func(tl *Timeline) error { _, err := tl.Submit(255); return err }, []error{ErrUnknownEngine}},
		{"wait on not yet submitted", setup, func(tl *Timeline) error { _, err := tl.Submit(0, Event{1, 2}); return err }, []error{ErrUnknownEvent}},
		{"wait on seq 0", setup, func(tl *Timeline) error { _, err := tl.Submit(0, Event{1, 0}); return err }, []error{ErrUnknownEvent}},
		{"wait on an engine with no ops", setup, func(tl *Timeline) error { _, err := tl.Submit(0, Event{2, 2}); return err }, []error{ErrUnknownEvent}},
		{"wait on unknown engine", setup, func(tl *Timeline) error { _, err := tl.Submit(0, Event{9, 1}); return err }, []error{ErrUnknownEvent, ErrUnknownEngine}},
		{"one good wait, one bad", setup, func(tl *Timeline) error { _, err := tl.Submit(2, Event{0, 1}, Event{0, 4}); return err }, []error{ErrUnknownEvent}},
		{"host sync on not yet submitted", setup, func(tl *Timeline) error { return tl.HostSync(Event{1, 2}) }, []error{ErrUnknownEvent}},
		{"host sync on unknown engine", setup, func(tl *Timeline) error { return tl.HostSync(Event{7, 1}) }, []error{ErrUnknownEvent, ErrUnknownEngine}},
		{"complete not yet submitted", setup, func(tl *Timeline) error { return tl.Complete(Event{1, 2}) }, []error{ErrUnknownEvent}},
		{"complete zero event", setup, func(tl *Timeline) error { return tl.Complete(Event{}) }, []error{ErrUnknownEvent}},
		{"complete twice", setup, func(tl *Timeline) error { return tl.Complete(Event{0, 3}) }, []error{ErrAlreadyCompleted}},
		{"complete out of order", setup, func(tl *Timeline) error { return tl.Complete(Event{0, 1}) }, []error{ErrAlreadyCompleted}},
		{"complete what a completed op waited for", func(tb testing.TB) *Timeline {
			tl := newEngines(tb, 2)
			a := mustSubmit(tb, tl, 0)
			b := mustSubmit(tb, tl, 1, a)
			mustComplete(tb, tl, b)
			return tl
		}, func(tl *Timeline) error { return tl.Complete(Event{0, 1}) }, []error{ErrAlreadyCompleted}},
		{"event clock of unknown event", setup, func(tl *Timeline) error { _, err := tl.EventClock(Event{2, 5}); return err }, []error{ErrUnknownEvent}},
		{"happens-before, unknown first", setup, func(tl *Timeline) error { _, err := tl.HappensBefore(Event{0, 9}, Event{0, 1}); return err }, []error{ErrUnknownEvent}},
		{"happens-before, unknown second", setup, func(tl *Timeline) error { _, err := tl.HappensBefore(Event{0, 1}, Event{5, 1}); return err }, []error{ErrUnknownEvent, ErrUnknownEngine}},
		{"point of unknown engine", setup, func(tl *Timeline) error { _, err := tl.Point(4); return err }, []error{ErrUnknownEngine}},
		{"describe unknown engine", setup, func(tl *Timeline) error { _, err := tl.Engine(4); return err }, []error{ErrUnknownEngine}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := tc.setup(t)
			testutil.Invariants(t, tl)
			before := snapshot(tl)
			err := tc.call(tl)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Errorf("error %q does not match %v", err, want)
				}
			}
			for _, other := range []error{ErrUnknownEngine, ErrUnknownEvent, ErrAlreadyCompleted, ErrTooManyEngines, ErrDuplicateEngine, ErrInvalidEngine, ErrForgotten} {
				wanted := false
				for _, w := range tc.want {
					wanted = wanted || w == other
				}
				if !wanted && errors.Is(err, other) {
					t.Errorf("error %q also matches %v", err, other)
				}
			}
			requireSameState(t, before, snapshot(tl), tc.name)
			testutil.Invariants(t, tl)
		})
	}
}

// TestQueriesOnBadInput checks the queries that report rather than fail.
func TestQueriesOnBadInput(t *testing.T) {
	tl := newEngines(t, 2)
	a := mustSubmit(t, tl, 0)
	before := snapshot(tl)
	if tl.Submitted(9) != 0 || tl.Submitted(1) != 0 || tl.Submitted(0) != 1 {
		t.Fatal("Submitted wrong")
	}
	if tl.Completed(Event{0, 2}) || tl.Completed(Event{9, 1}) || tl.Completed(a) {
		t.Fatal("Completed reports an op that has not completed")
	}
	if !tl.Completed(Event{}) {
		t.Fatal("the zero event (nothing) is not completed")
	}
	if tl.HappensBeforePoint(Event{9, 1}, Point{}) {
		t.Fatal("an unknown event happens-before a point")
	}
	requireSameState(t, before, snapshot(tl), "queries")
}
