package sync

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/internal/testutil"
)

// newEngines returns a Timeline with n compute engines named e0..e{n-1}.
func newEngines(tb testing.TB, n int) *Timeline {
	tb.Helper()
	t := NewTimeline()
	for i := 0; i < n; i++ {
		id, err := t.AddEngine(fmt.Sprintf("e%d", i), Kind(i%int(numKinds)))
		if err != nil {
			tb.Fatal(err)
		}
		if int(id) != i {
			tb.Fatalf("engine %d got id %d", i, id)
		}
	}
	return t
}

func mustSubmit(tb testing.TB, t *Timeline, e EngineID, waits ...Event) Event {
	tb.Helper()
	ev, err := t.Submit(e, waits...)
	if err != nil {
		tb.Fatal(err)
	}
	testutil.Invariants(tb, t)
	return ev
}

// mustHostSync records tl.HostSync(ev), failing tb on an error.
func mustHostSync(tb testing.TB, tl *Timeline, ev Event) {
	tb.Helper()
	if err := tl.HostSync(ev); err != nil {
		tb.Fatal(err)
	}
}

// mustComplete records tl.Complete(ev), failing tb on an error.
func mustComplete(tb testing.TB, tl *Timeline, ev Event) {
	tb.Helper()
	if err := tl.Complete(ev); err != nil {
		tb.Fatal(err)
	}
}

func mustHB(tb testing.TB, t *Timeline, a, b Event) bool {
	tb.Helper()
	hb, err := t.HappensBefore(a, b)
	if err != nil {
		tb.Fatal(err)
	}
	return hb
}

// playScript plays script on tl and returns the events it names a and b.
// Steps are separated by ";": "n=E<-x,y" submits an op on engine E that
// waits for the events named x and y and names it n (the name and the
// waits are optional), "n=m" names m's event n too, "sync n" host-syncs n
// and "complete n" completes it.
func playScript(tb testing.TB, tl *Timeline, script string) (a, b Event) {
	tb.Helper()
	events := map[string]Event{}
	named := func(n string) Event {
		tb.Helper()
		ev, ok := events[n]
		if !ok {
			tb.Fatalf("script %q: no event named %q", script, n)
		}
		return ev
	}
	for _, step := range strings.Split(script, ";") {
		step = strings.TrimSpace(step)
		if n, ok := strings.CutPrefix(step, "sync "); ok {
			mustHostSync(tb, tl, named(n))
			continue
		}
		if n, ok := strings.CutPrefix(step, "complete "); ok {
			mustComplete(tb, tl, named(n))
			continue
		}
		name, op, ok := strings.Cut(step, "=")
		if !ok {
			name, op = "", step
		}
		engine, deps, _ := strings.Cut(op, "<-")
		e, err := strconv.Atoi(engine)
		if err != nil {
			events[name] = named(engine)
			continue
		}
		var waits []Event
		if deps != "" {
			for _, d := range strings.Split(deps, ",") {
				waits = append(waits, named(d))
			}
		}
		ev := mustSubmit(tb, tl, EngineID(e), waits...)
		if name != "" {
			events[name] = ev
		}
	}
	return named("a"), named("b")
}

func TestHappensBeforeRules(t *testing.T) {
	cases := []struct {
		name string
		// script builds a scenario on a 3-engine timeline and names the
		// pair asked about a and b (see playScript).
		script string
		// aBeforeB and bBeforeA are the happens-before answers;
		// aCompletedByB says Complete(b) completes a.
		aBeforeB, bBeforeA, aCompletedByB bool
	}{
		{"same engine", "a=0; b=0", true, false, true},
		{"same engine, not adjacent", "a=0; 0; b=0", true, false, true},
		{"direct wait", "a=0; b=1<-a", true, false, true},
		{"wait on a later op of the same engine covers earlier ops", "a=0; a2=0; b=1<-a2", true, false, true},
		{"transitive through a third engine", "a=0; m=2<-a; b=1<-m", true, false, true},
		{"transitive through a later op of the third engine", "a=0; 2<-a; m2=2; b=1<-m2", true, false, true},
		{"host sync orders later submissions on any engine", "a=0; sync a; b=1", true, false, true},
		{"host sync is transitive", "a=2; m=0<-a; sync m; b=1", true, false, true},
		{"host sync does not order earlier submissions", "b=1; a=0; sync a", false, false, false},
		{"unrelated engines", "a=0; b=1", false, false, false},
		{"a later op's wait does not order an earlier op", "a=0; b=1; 1<-a", false, false, false},
		{"completion is not ordering", "a=0; complete a; b=1", false, false, false},
		{"wait in the other direction", "b=1; a=0<-b", false, true, false},
		{"an event does not happen-before itself", "a=0; b=a", false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := newEngines(t, 3)
			a, b := playScript(t, tl, tc.script)
			if got := mustHB(t, tl, a, b); got != tc.aBeforeB {
				t.Errorf("HappensBefore(%v, %v) = %v, want %v", a, b, got, tc.aBeforeB)
			}
			if got := mustHB(t, tl, b, a); got != tc.bBeforeA {
				t.Errorf("HappensBefore(%v, %v) = %v, want %v", b, a, got, tc.bBeforeA)
			}
			bc, err := tl.EventClock(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := bc.Covers(a); got != (tc.aBeforeB || a == b) {
				t.Errorf("EventClock(%v) = %v covers %v: %v", b, bc, a, got)
			}
			if !tl.Completed(a) {
				mustComplete(t, tl, b)
				testutil.Invariants(t, tl)
				if got := tl.Completed(a); got != tc.aCompletedByB {
					t.Errorf("after Complete(%v), Completed(%v) = %v, want %v", b, a, got, tc.aCompletedByB)
				}
			}
		})
	}
}

func TestPointSemantics(t *testing.T) {
	t.Run("empty engine has an empty point", func(t *testing.T) {
		tl := newEngines(t, 2)
		mustSubmit(t, tl, 0)
		p, err := tl.Point(1)
		if err != nil {
			t.Fatal(err)
		}
		if p.Engine != 1 || !p.Clock.IsZero() {
			t.Fatalf("Point(1) = %+v, want engine 1 with a zero clock", p)
		}
	})
	t.Run("covers the engine's last op and its waits", func(t *testing.T) {
		tl := newEngines(t, 3)
		x := mustSubmit(t, tl, 2)
		w := mustSubmit(t, tl, 0, x)
		last := mustSubmit(t, tl, 1, w)
		p, _ := tl.Point(1)
		for _, ev := range []Event{x, w, last} {
			if !tl.HappensBeforePoint(ev, p) {
				t.Errorf("Point(1) %v does not cover %v", p.Clock, ev)
			}
		}
	})
	t.Run("a later op's waits are not in an earlier point", func(t *testing.T) {
		tl := newEngines(t, 2)
		a := mustSubmit(t, tl, 0)
		early, _ := tl.Point(1)
		mustSubmit(t, tl, 1, a)
		late, _ := tl.Point(1)
		if tl.HappensBeforePoint(a, early) {
			t.Errorf("early point %v covers %v, which only a later op waits for", early.Clock, a)
		}
		if !tl.HappensBeforePoint(a, late) {
			t.Errorf("late point %v does not cover %v", late.Clock, a)
		}
	})
	t.Run("other engines' later waits are not in a point", func(t *testing.T) {
		tl := newEngines(t, 3)
		a := mustSubmit(t, tl, 0)
		mustSubmit(t, tl, 1)
		mustSubmit(t, tl, 2, a) // engine 2 waits, engine 1 does not
		p, _ := tl.Point(1)
		if tl.HappensBeforePoint(a, p) {
			t.Errorf("Point(1) %v covers %v", p.Clock, a)
		}
	})
	t.Run("host syncs are in every point", func(t *testing.T) {
		tl := newEngines(t, 3)
		x := mustSubmit(t, tl, 2)
		a := mustSubmit(t, tl, 0, x)
		mustSubmit(t, tl, 1)
		mustHostSync(t, tl, a)
		testutil.Invariants(t, tl)
		for e := EngineID(0); e < 3; e++ {
			p, _ := tl.Point(e)
			if !tl.HappensBeforePoint(a, p) || !tl.HappensBeforePoint(x, p) {
				t.Errorf("Point(%d) %v misses host-synced %v or its predecessor %v", e, p.Clock, a, x)
			}
		}
	})
	t.Run("SafeFor mixes ordering and completion", func(t *testing.T) {
		tl := newEngines(t, 3)
		r1 := mustSubmit(t, tl, 1)
		r2 := mustSubmit(t, tl, 2)
		var fence Clock
		fence.Observe(r1)
		fence.Observe(r2)
		mustSubmit(t, tl, 0, r1)
		p, _ := tl.Point(0)
		if tl.SafeFor(&fence, p) {
			t.Fatalf("fence %v safe for %v while %v is neither ordered nor complete", fence, p.Clock, r2)
		}
		mustComplete(t, tl, r2)
		if !tl.SafeFor(&fence, p) {
			t.Fatalf("fence %v not safe for %v after %v completed", fence, p.Clock, r2)
		}
		if tl.AllCompleted(&fence) {
			t.Fatalf("AllCompleted(%v) with %v pending", fence, r1)
		}
		if !tl.SafeFor(nil, p) {
			t.Fatal("nil fence is not safe")
		}
	})
}

func TestEngines(t *testing.T) {
	tl := NewTimeline()
	var zero Timeline // the zero value works too
	for _, x := range []*Timeline{tl, &zero} {
		c, err := x.AddEngine("compute", Compute)
		if err != nil {
			t.Fatal(err)
		}
		d, err := x.AddEngine("dma", Copy)
		if err != nil {
			t.Fatal(err)
		}
		want := []Engine{{ID: c, Name: "compute", Kind: Compute}, {ID: d, Name: "dma", Kind: Copy}}
		got := x.Engines()
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("Engines() = %+v, want %+v", got, want)
		}
		if id, ok := x.EngineByName("dma"); !ok || id != d {
			t.Fatalf("EngineByName(dma) = %d, %v", id, ok)
		}
		if _, ok := x.EngineByName("nope"); ok {
			t.Fatal("EngineByName(nope) found something")
		}
		if e, err := x.Engine(d); err != nil || e != want[1] {
			t.Fatalf("Engine(%d) = %+v, %v", d, e, err)
		}
		testutil.Invariants(t, x)
	}
	for k, want := range map[Kind]string{Compute: "compute", Copy: "copy", Network: "network", Host: "host", 9: "kind(9)"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestSubscribe(t *testing.T) {
	tl := newEngines(t, 2)
	var got []Clock
	unsubscribe := tl.Subscribe(func(c Clock) {
		// Calling back into the Timeline must not deadlock.
		if now := tl.CompletedClock(); !c.LessEq(&now) {
			t.Errorf("notified clock %v ahead of CompletedClock %v", c, now)
		}
		if _, err := tl.Submit(1); err != nil {
			t.Error(err)
		}
		got = append(got, c)
	})
	a := mustSubmit(t, tl, 0)
	b := mustSubmit(t, tl, 1, a)
	mustComplete(t, tl, b)
	if err := tl.Complete(a); !errors.Is(err, ErrAlreadyCompleted) {
		t.Fatalf("Complete(%v) after %v = %v, want ErrAlreadyCompleted", a, b, err)
	}
	want := Clock{1, 1}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("notifications %v, want exactly [%v]", got, want)
	}
	unsubscribe()
	unsubscribe()
	c := mustSubmit(t, tl, 0)
	mustComplete(t, tl, c)
	if len(got) != 1 {
		t.Fatalf("notified after unsubscribe: %v", got)
	}
	tl.Subscribe(nil)() // a nil fn registers nothing
	testutil.Invariants(t, tl)
}

func TestClockOps(t *testing.T) {
	a := Clock{3, 0, 5}
	b := Clock{1, 4, 5}
	j := a
	j.Join(&b)
	if j != (Clock{3, 4, 5}) {
		t.Fatalf("join = %v", j)
	}
	if !a.LessEq(&j) || !b.LessEq(&j) || j.LessEq(&a) || a.LessEq(&b) || b.LessEq(&a) {
		t.Fatal("LessEq disagrees with join")
	}
	if !a.Covers(Event{0, 3}) || a.Covers(Event{0, 4}) || a.Covers(Event{1, 1}) || !a.Covers(Event{}) {
		t.Fatal("Covers wrong")
	}
	if a.Covers(Event{Engine: 200, Seq: 1}) {
		t.Fatal("Covers an engine beyond MaxEngines")
	}
	a.Observe(Event{1, 2})
	a.Observe(Event{0, 1})
	a.Observe(Event{Engine: 200, Seq: 9})
	if a != (Clock{3, 2, 5}) {
		t.Fatalf("observe = %v", a)
	}
	var nilClock *Clock
	nilClock.Join(&a)
	nilClock.Observe(Event{0, 1})
	if !nilClock.LessEq(&a) || a.LessEq(nilClock) || !nilClock.IsZero() || nilClock.Covers(Event{0, 1}) {
		t.Fatal("nil clock is not the zero clock")
	}
	if s := a.String(); s != "{e0:3 e1:2 e2:5}" {
		t.Fatalf("String = %q", s)
	}
	if s := (Event{2, 7}).String(); s != "e2#7" {
		t.Fatalf("Event.String = %q", s)
	}
	if s := (Event{}).String(); s != "none" {
		t.Fatalf("zero Event.String = %q", s)
	}
}

// TestLongHistory crosses several chunk boundaries and checks every
// stored clock against clocks tracked by hand.
func TestLongHistory(t *testing.T) {
	tl := newEngines(t, 2)
	const n = 3*chunkLen + 17
	var want [2][]Clock
	var last [2]Clock
	for i := 0; i < n; i++ {
		a := mustSubmitQuiet(t, tl, 0)
		last[0][0] = a.Seq
		want[0] = append(want[0], last[0])
		var b Event
		if i%3 == 0 {
			b = mustSubmitQuiet(t, tl, 1, a)
			last[1].Join(&last[0])
		} else {
			b = mustSubmitQuiet(t, tl, 1)
		}
		last[1][1] = b.Seq
		want[1] = append(want[1], last[1])
	}
	testutil.Invariants(t, tl)
	for e := range want {
		for i, w := range want[e] {
			ev := Event{EngineID(e), Seq(i + 1)}
			got, err := tl.EventClock(ev)
			if err != nil || got != w {
				t.Fatalf("EventClock(%v) = %v, %v; want %v", ev, got, err, w)
			}
		}
	}
	mustComplete(t, tl, Event{1, n})
	// The last engine-1 op that waited was at i0, for engine 0's op i0+1.
	i0 := (n - 1) - (n-1)%3
	if got, want := tl.CompletedClock(), (Clock{Seq(i0 + 1), n}); got != want {
		t.Fatalf("CompletedClock = %v, want %v", got, want)
	}
	testutil.Invariants(t, tl)
}

func mustSubmitQuiet(tb testing.TB, t *Timeline, e EngineID, waits ...Event) Event {
	tb.Helper()
	ev, err := t.Submit(e, waits...)
	if err != nil {
		tb.Fatal(err)
	}
	return ev
}

// TestForgetRecyclesChunks runs a long two-engine pipeline that forgets as
// it goes: the dropped chunks are reused, so memory stays bounded and the
// steady state allocates nothing.
func TestForgetRecyclesChunks(t *testing.T) {
	tl := newEngines(t, 2)
	var prev Event
	step := func() {
		a := mustSubmitQuiet(t, tl, 0)
		var b Event
		if prev.IsZero() {
			b = mustSubmitQuiet(t, tl, 1, a)
		} else {
			b = mustSubmitQuiet(t, tl, 1, a, prev) // prev is usually forgotten
		}
		mustComplete(t, tl, b)
		prev = b
		if b.Seq%chunkLen == 0 {
			tl.Forget()
		}
	}
	for range 4 * chunkLen {
		step()
	}
	testutil.Invariants(t, tl)
	if f := tl.Forgotten(1); f < 2*chunkLen {
		t.Fatalf("Forgotten(1) = %d after %d completed ops", f, 4*chunkLen)
	}
	if _, err := tl.EventClock(Event{1, 1}); !errors.Is(err, ErrForgotten) {
		t.Fatalf("EventClock of a forgotten op = %v", err)
	}
	if invariants.Enabled {
		return // the invariant checks every mutator runs allocate
	}
	if allocs := testing.AllocsPerRun(4*chunkLen, step); allocs != 0 {
		t.Fatalf("steady state with Forget allocates %v per step", allocs)
	}
	testutil.Invariants(t, tl)
	for e := range 2 {
		h := &tl.hist[e]
		if stored := h.n - h.base; stored > 2*chunkLen {
			t.Fatalf("engine %d still stores %d clocks", e, stored)
		}
	}
	// Forgetting changed no answer about completion or safety.
	p, _ := tl.Point(0)
	var fence Clock
	fence.Observe(Event{1, 3})
	if !tl.SafeFor(&fence, p) || !tl.Completed(Event{0, 1}) {
		t.Fatal("a forgotten op is no longer completed or safe")
	}
	if err := tl.Complete(Event{0, 1}); !errors.Is(err, ErrAlreadyCompleted) {
		t.Fatalf("Complete of a forgotten op = %v", err)
	}
}
