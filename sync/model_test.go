package sync

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// refModel is the slow reference: it keeps the happens-before DAG
// explicitly (direct predecessor edges) and answers every question by
// brute-force transitive closure. It knows nothing of vector clocks.
//
// It also mirrors Forget: an edge to an op that was forgotten when the
// edge was made is weak. The exact relation follows weak edges like any
// other; the remembered relation (what the Timeline's clocks can still
// tell) takes from a weak edge its target, the earlier ops of the target's
// engine and every op completed when the edge was made (they finished
// before the op behind the edge could start), and follows nothing further.
type refModel struct {
	byEngine  [][]int // byEngine[e][s-1] = index of op (e, s)
	events    []Event
	preds     [][]edge // direct predecessors of each op
	synced    []edge   // ops the host has synced on, in order
	completed []bool
	forgotten []Seq // per engine: last forgotten seq
	// doneAtSubmit[i] lists the ops completed when op i was submitted.
	doneAtSubmit [][]bool
}

type edge struct {
	to   int
	weak bool
	done []int // weak: the ops completed when the edge was made
}

func (m *refModel) addEngine() {
	m.byEngine = append(m.byEngine, nil)
	m.forgotten = append(m.forgotten, 0)
}

func (m *refModel) index(ev Event) (int, bool) {
	if int(ev.Engine) >= len(m.byEngine) || ev.Seq == 0 || int(ev.Seq) > len(m.byEngine[ev.Engine]) {
		return 0, false
	}
	return m.byEngine[ev.Engine][ev.Seq-1], true
}

func (m *refModel) isForgotten(ev Event) bool { return ev.Seq <= m.forgotten[ev.Engine] }

// edgeTo returns an edge to the submitted op ev, weak if ev is forgotten.
func (m *refModel) edgeTo(ev Event) edge {
	i, _ := m.index(ev)
	ed := edge{to: i, weak: m.isForgotten(ev)}
	if ed.weak {
		for j, c := range m.completed {
			if c {
				ed.done = append(ed.done, j)
			}
		}
	}
	return ed
}

func (m *refModel) submit(e EngineID, waits []Event) Event {
	var preds []edge
	if ops := m.byEngine[e]; len(ops) > 0 {
		preds = append(preds, edge{to: ops[len(ops)-1]})
	}
	for _, w := range waits {
		preds = append(preds, m.edgeTo(w))
	}
	preds = append(preds, m.synced...)
	ev := Event{Engine: e, Seq: Seq(len(m.byEngine[e]) + 1)}
	m.byEngine[e] = append(m.byEngine[e], len(m.events))
	m.events = append(m.events, ev)
	m.preds = append(m.preds, preds)
	m.doneAtSubmit = append(m.doneAtSubmit, append([]bool(nil), m.completed...))
	m.completed = append(m.completed, false)
	return ev
}

// closure returns the roots and everything reachable backwards from them.
// exact follows weak edges; otherwise a weak edge (and a weak root) adds
// its target and the target engine's earlier ops only.
func (m *refModel) closure(exact bool, roots ...edge) []bool {
	set := make([]bool, len(m.events))
	follow := make([]bool, len(m.events))
	stack := append([]edge(nil), roots...)
	for len(stack) > 0 {
		ed := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		set[ed.to] = true
		if ed.weak && !exact {
			ev := m.events[ed.to]
			for _, j := range m.byEngine[ev.Engine][:ev.Seq] {
				set[j] = true
			}
			for _, j := range ed.done {
				set[j] = true
			}
			continue
		}
		if follow[ed.to] {
			continue
		}
		follow[ed.to] = true
		stack = append(stack, m.preds[ed.to]...)
	}
	return set
}

// ancestors returns the strict ancestors of op i.
func (m *refModel) ancestors(i int, exact bool) []bool {
	return m.closure(exact, m.preds[i]...)
}

// clockOf returns the latest seq per engine in set.
func (m *refModel) clockOf(set []bool) Clock {
	var c Clock
	for i, in := range set {
		if in {
			c.Observe(m.events[i])
		}
	}
	return c
}

// pointSet returns what happens-before the next op on e.
func (m *refModel) pointSet(e EngineID, exact bool) []bool {
	roots := append([]edge(nil), m.synced...)
	if ops := m.byEngine[e]; len(ops) > 0 {
		roots = append(roots, edge{to: ops[len(ops)-1]})
	}
	return m.closure(exact, roots...)
}

// complete marks op i and all its ancestors completed; false if i already was.
func (m *refModel) complete(i int) bool {
	if m.completed[i] {
		return false
	}
	for j, in := range m.closure(true, edge{to: i}) {
		m.completed[j] = m.completed[j] || in
	}
	return true
}

// forget mirrors Timeline.Forget: every completed op but the last of its
// engine becomes forgotten.
func (m *refModel) forget() {
	for e, ops := range m.byEngine {
		done := Seq(0)
		for s, i := range ops {
			if m.completed[i] && s+1 < len(ops) {
				done = Seq(s + 1)
			}
		}
		m.forgotten[e] = max(m.forgotten[e], done)
	}
}

// safeFor checks every op the fence covers, one by one, against the exact
// relation.
func (m *refModel) safeFor(fence *Clock, e EngineID) bool {
	p := m.pointSet(e, true)
	for f, s := range fence {
		for q := Seq(1); q <= s; q++ {
			i := m.byEngine[f][q-1]
			if !m.completed[i] && !p[i] {
				return false
			}
		}
	}
	return true
}

// chooser supplies the random decisions of a scenario: from a PRNG in the
// property test, from the input bytes in the fuzz target.
type chooser interface {
	intn(n int) int // in [0, n); n > 0
	done() bool
}

type rngChooser struct {
	r     *rand.Rand
	steps int
}

func (c *rngChooser) intn(n int) int { return c.r.IntN(n) }
func (c *rngChooser) done() bool     { c.steps--; return c.steps < 0 }

type byteChooser struct{ data []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	v := int(c.data[0])
	c.data = c.data[1:]
	return v % n
}
func (c *byteChooser) done() bool { return len(c.data) == 0 }

// runScenario drives a Timeline and the reference model with the same
// random steps on 2..maxEngines engines, checking invariants and comparing
// every answer after every step.
func runScenario(tb testing.TB, ch chooser, maxEngines int) {
	tl := NewTimeline()
	m := &refModel{}
	addEngine := func() {
		id, err := tl.AddEngine(fmt.Sprint("e", len(m.byEngine)), Kind(ch.intn(int(numKinds))))
		if err != nil {
			tb.Fatal(err)
		}
		if int(id) != len(m.byEngine) {
			tb.Fatalf("AddEngine gave id %d, want %d", id, len(m.byEngine))
		}
		m.addEngine()
	}
	for range 2 + ch.intn(maxEngines-1) {
		addEngine()
	}
	// pickEvent returns a submitted event most of the time, else a bogus one.
	pickEvent := func() (Event, bool) {
		if len(m.events) == 0 || ch.intn(10) == 0 {
			switch ch.intn(3) {
			case 0:
				return Event{Engine: EngineID(len(m.byEngine) + ch.intn(3)), Seq: 1}, false
			case 1:
				return Event{Engine: EngineID(ch.intn(len(m.byEngine)))}, false
			default:
				e := ch.intn(len(m.byEngine))
				return Event{Engine: EngineID(e), Seq: Seq(len(m.byEngine[e]) + 1 + ch.intn(2))}, false
			}
		}
		return m.events[ch.intn(len(m.events))], true
	}
	for step := 0; !ch.done(); step++ {
		before := snapshot(tl)
		var err error
		var wantErr error
		what := ""
		switch k := ch.intn(21); {
		case k < 9: // submit
			e := EngineID(ch.intn(len(m.byEngine) + 1)) // sometimes unknown
			waits := make([]Event, ch.intn(4))
			valid := int(e) < len(m.byEngine)
			if !valid {
				wantErr = ErrUnknownEngine
			}
			for i := range waits {
				var ok bool
				waits[i], ok = pickEvent()
				if !ok && valid {
					valid, wantErr = false, ErrUnknownEvent
				}
			}
			what = fmt.Sprintf("Submit(%d, %v)", e, waits)
			var ev Event
			ev, err = tl.Submit(e, waits...)
			if valid {
				if want := m.submit(e, waits); err == nil && ev != want {
					tb.Fatalf("step %d: %s = %v, want %v", step, what, ev, want)
				}
			}
		case k < 11: // host sync
			ev, ok := pickEvent()
			what = fmt.Sprintf("HostSync(%v)", ev)
			err = tl.HostSync(ev)
			if ok {
				m.synced = append(m.synced, m.edgeTo(ev))
			} else {
				wantErr = ErrUnknownEvent
			}
		case k < 18: // complete
			ev, ok := pickEvent()
			what = fmt.Sprintf("Complete(%v)", ev)
			err = tl.Complete(ev)
			if !ok {
				wantErr = ErrUnknownEvent
			} else if i, _ := m.index(ev); !m.complete(i) {
				wantErr = ErrAlreadyCompleted
			}
		case k < 19:
			what = "Forget"
			if ch.intn(3) == 0 {
				tl.Forget()
				m.forget()
			}
		default:
			what = "AddEngine"
			if len(m.byEngine) < maxEngines {
				addEngine()
			}
		}
		if wantErr == nil && err != nil {
			tb.Fatalf("step %d: %s: unexpected error %v", step, what, err)
		}
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				tb.Fatalf("step %d: %s = %v, want %v", step, what, err, wantErr)
			}
			requireSameState(tb, before, snapshot(tl), what)
		}
		if err := tl.CheckInvariants(); err != nil {
			tb.Fatalf("step %d after %s: %v", step, what, err)
		}
		compareWithModel(tb, tl, m, ch, fmt.Sprintf("step %d after %s", step, what))
	}
}

// compareWithModel compares every answer the Timeline gives with the
// reference model's: clocks and happens-before with the remembered
// relation (and never claiming more than the exact one), completion and
// SafeFor with the exact relation.
func compareWithModel(tb testing.TB, tl *Timeline, m *refModel, ch chooser, where string) {
	tb.Helper()
	anc := make([][]bool, len(m.events))
	exact := make([][]bool, len(m.events))
	for i := range m.events {
		anc[i] = m.ancestors(i, false)
		exact[i] = m.ancestors(i, true)
	}
	var completed Clock
	for i, ev := range m.events {
		if m.completed[i] {
			completed.Observe(ev)
		}
		if got := tl.Completed(ev); got != m.completed[i] {
			tb.Fatalf("%s: Completed(%v) = %v, want %v", where, ev, got, m.completed[i])
		}
		if got, want := tl.Forgotten(ev.Engine), m.forgotten[ev.Engine]; got != want {
			tb.Fatalf("%s: Forgotten(%d) = %d, want %d", where, ev.Engine, got, want)
		}
		c, err := tl.EventClock(ev)
		if m.isForgotten(ev) {
			if !errors.Is(err, ErrForgotten) {
				tb.Fatalf("%s: EventClock(forgotten %v) = %v, %v", where, ev, c, err)
			}
		} else {
			if err != nil {
				tb.Fatalf("%s: EventClock(%v): %v", where, ev, err)
			}
			set := append([]bool(nil), anc[i]...)
			set[i] = true
			if want := m.clockOf(set); c != want {
				tb.Fatalf("%s: EventClock(%v) = %v, want %v", where, ev, c, want)
			}
		}
		for j, b := range m.events {
			hb, err := tl.HappensBefore(ev, b)
			if m.isForgotten(b) {
				if !errors.Is(err, ErrForgotten) {
					tb.Fatalf("%s: HappensBefore(%v, forgotten %v) = %v, %v", where, ev, b, hb, err)
				}
				continue
			}
			if err != nil {
				tb.Fatalf("%s: HappensBefore(%v, %v): %v", where, ev, b, err)
			}
			if want := anc[j][i]; hb != want {
				tb.Fatalf("%s: HappensBefore(%v, %v) = %v, want %v", where, ev, b, hb, want)
			}
			if hb && !exact[j][i] && (i >= len(m.doneAtSubmit[j]) || !m.doneAtSubmit[j][i]) {
				tb.Fatalf("%s: HappensBefore(%v, %v) = true for unordered ops, the first not completed when the second was submitted", where, ev, b)
			}
			if !hb && exact[j][i] && !m.completed[i] {
				tb.Fatalf("%s: HappensBefore(%v, %v) lost the order of an op not completed", where, ev, b)
			}
		}
	}
	if got := tl.CompletedClock(); got != completed {
		tb.Fatalf("%s: CompletedClock() = %v, want %v", where, got, completed)
	}
	for e := range m.byEngine {
		id := EngineID(e)
		if got, want := tl.Submitted(id), Seq(len(m.byEngine[e])); got != want {
			tb.Fatalf("%s: Submitted(%d) = %d, want %d", where, e, got, want)
		}
		p, err := tl.Point(id)
		if err != nil {
			tb.Fatalf("%s: Point(%d): %v", where, e, err)
		}
		if want := m.clockOf(m.pointSet(id, false)); p.Clock != want || p.Engine != id {
			tb.Fatalf("%s: Point(%d) = %v, want %v", where, e, p.Clock, want)
		}
		for range 3 {
			var fence Clock
			for f := range m.byEngine {
				if n := len(m.byEngine[f]); n > 0 && ch.intn(2) == 0 {
					fence[f] = Seq(1 + ch.intn(n))
				}
			}
			if got, want := tl.SafeFor(&fence, p), m.safeFor(&fence, id); got != want {
				tb.Fatalf("%s: SafeFor(%v, %v) = %v, want %v", where, fence, p.Clock, got, want)
			}
		}
	}
}

// TestAgainstReference runs random scenarios on 2–6 engines against the
// brute-force model.
func TestAgainstReference(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		steps := 20 + r.IntN(60)
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			runScenario(t, &rngChooser{r: r, steps: steps}, 6)
		})
	}
}

// FuzzTimeline drives the same scenarios from fuzzer-chosen bytes.
func FuzzTimeline(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{4, 1, 2, 0, 0, 1, 1, 9, 0, 12, 3, 3, 15, 0, 1, 2, 18, 1, 0})
	f.Add([]byte("the host syncs on a copy while compute waits"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 600 {
			data = data[:600]
		}
		runScenario(t, &byteChooser{data: data}, 6)
	})
}
