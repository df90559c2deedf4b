package liveness

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// model is a byte-by-byte reference for the Index: it keeps users and held
// bytes as plain slices and applies the return rule by brute force.
type model struct {
	n, g   int
	mode   Mode
	held   []bool
	users  map[UserID]modelUser
	pieces [][]bool // whole mode
	freed  []bool   // bytes returned (cleared when re-released)
}

type modelUser struct {
	ev      sasync.Event
	unknown bool
	bytes   []bool
	runs    []ranges.Range
}

// someUser returns a pending user of m chosen by r (in id order, so that a
// seed replays), and false when there is none.
func (m *model) someUser(r *rand.Rand) (modelUser, bool) {
	if len(m.users) == 0 {
		return modelUser{}, false
	}
	ids := slices.Sorted(maps.Keys(m.users))
	return m.users[ids[r.IntN(len(ids))]], true
}

func newModel(n, g int, mode Mode) *model {
	return &model{n: n, g: g, mode: mode, held: make([]bool, n), users: map[UserID]modelUser{}, freed: make([]bool, n)}
}

func (m *model) covered(x int) bool {
	for _, u := range m.users {
		if u.bytes[x] {
			return true
		}
	}
	return false
}

func (m *model) pieceCovered(p []bool) bool {
	for x, in := range p {
		if in && m.covered(x) {
			return true
		}
	}
	return false
}

// settle applies the return rule until nothing more returns.
func (m *model) settle() {
	whole := m.mode.Whole()
	if whole {
		kept := m.pieces[:0]
		for _, p := range m.pieces {
			if m.pieceCovered(p) {
				kept = append(kept, p)
			}
		}
		m.pieces = kept
	}
	for g0 := 0; g0 < m.n; g0 += m.g {
		ok := true
		for x := g0; x < g0+m.g && ok; x++ {
			if !m.held[x] {
				ok = false
				continue
			}
			switch {
			case m.mode == IROrder:
			case whole:
				for _, p := range m.pieces {
					if p[x] {
						ok = false
					}
				}
			default:
				if m.covered(x) {
					ok = false
				}
			}
		}
		if ok {
			for x := g0; x < g0+m.g; x++ {
				m.held[x] = false
				m.freed[x] = true
			}
		}
	}
}

func toSet(bs []bool) ranges.Set {
	var s ranges.Set
	for x, in := range bs {
		if in {
			s.Add(ranges.Range{Lo: int64(x), Hi: int64(x) + 1})
		}
	}
	return s
}

func randomRuns(r *rand.Rand, n int) []ranges.Range {
	var s ranges.Set
	for k := r.IntN(3) + 1; k > 0; k-- {
		lo := r.IntN(n)
		hi := lo + 1 + r.IntN(min(n-lo, 64))
		s.Add(ranges.Range{Lo: int64(lo), Hi: int64(hi)})
	}
	return append([]ranges.Range(nil), s.Runs()...)
}

// TestIndexAgainstModel drives random adds, removals, releases, completions
// and takes against the brute-force model in every mode, checking
// invariants after every step.
func TestIndexAgainstModel(t *testing.T) {
	modes := []Mode{SubrangeAfterUsers, SubrangeFenced, WholeAfterUsers, WholeFenced, IROrder}
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	for _, mode := range modes {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/%d", mode, seed), func(t *testing.T) {
				runModel(t, mode, seed, steps)
			})
		}
	}
}

// The model run's arena bytes, granule and engines.
const runN, runG, runEngines = 512, 16, 3

func runModel(t *testing.T, mode Mode, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 7))
	x, err := New(runG, mode)
	if err != nil {
		t.Fatal(err)
	}
	s := &modelRun{t: t, mode: mode, r: r, x: x, m: newModel(runN, runG, mode)}
	s.owned.Add(ranges.Range{Lo: 0, Hi: runN})
	s.free = func(rg ranges.Range) {
		if rg.Lo%runG != 0 || rg.Hi%runG != 0 {
			t.Fatalf("free of unaligned %v", rg)
		}
		s.freedNow = append(s.freedNow, rg)
	}
	for step := 0; step < steps; step++ {
		s.freedNow = s.freedNow[:0]
		var what string
		ok := true
		switch op := r.IntN(10); {
		case op < 4:
			what = s.addUser()
		case op < 5:
			what = s.removeUnknown()
		case op < 7:
			what, ok = s.release()
		case op < 9:
			what, ok = s.complete()
		default:
			what = s.take()
		}
		if !ok {
			continue
		}
		s.check(step, what)
	}
}

// modelRun is one runModel: the Index, its model, the engines' clocks,
// and the bytes the program still owns.
type modelRun struct {
	t    *testing.T
	mode Mode
	r    *rand.Rand
	x    *Index
	m    *model

	submitted, completed sasync.Clock
	owned                ranges.Set // bytes not held: the program's, free to release
	freedNow             []ranges.Range
	free                 func(ranges.Range)
}

// addUser adds a user.
func (s *modelRun) addUser() string {
	r, m := s.r, s.m
	runs := randomRuns(r, runN)
	if u, ok := m.someUser(r); ok && r.IntN(3) == 0 {
		runs = u.runs // the same view used again: its keys are shared
	}
	unknown := r.IntN(8) == 0
	e := r.IntN(runEngines)
	ev := sasync.Event{Engine: sasync.EngineID(e), Seq: s.submitted[e] + 1}
	s.submitted[e]++
	id, err := s.x.AddUser(ev, unknown, runs)
	if err != nil {
		s.t.Fatal(err)
	}
	bs := make([]bool, runN)
	for _, rg := range runs {
		for b := rg.Lo; b < rg.Hi; b++ {
			bs[b] = true
		}
	}
	m.users[id] = modelUser{ev: ev, unknown: unknown, bytes: bs, runs: runs}
	return fmt.Sprintf("add %d %v unknown=%v %v", id, ev, unknown, runs)
}

// removeUnknown removes an unknown user.
func (s *modelRun) removeUnknown() string {
	for id, u := range s.m.users {
		if u.unknown {
			if err := s.x.RemoveUser(id, s.free); err != nil {
				s.t.Fatal(err)
			}
			delete(s.m.users, id)
			s.m.settle()
			return fmt.Sprintf("remove %d", id)
		}
	}
	return ""
}

// release releases some owned bytes; false when none are owned.
func (s *modelRun) release() (string, bool) {
	t, r, x, m := s.t, s.r, s.x, s.m
	if s.owned.IsEmpty() {
		return "", false
	}
	runs := s.owned.Runs()
	rg := runs[r.IntN(len(runs))]
	lo := rg.Lo + int64(r.IntN(int(rg.Len())))
	hi := lo + 1 + int64(r.IntN(int(rg.Hi-lo)))
	if u, ok := m.someUser(r); ok && r.IntN(3) == 0 {
		// Exactly a pending user's run, when the program still
		// holds it: a buffer released while its user is pending.
		if ur := u.runs[r.IntN(len(u.runs))]; s.owned.ContainsRange(ur) {
			lo, hi = ur.Lo, ur.Hi
		}
	}
	rel := ranges.FromRanges(ranges.Range{Lo: lo, Hi: hi})
	if err := x.Release(&rel, s.free); err != nil {
		t.Fatal(err)
	}
	if _, still := x.Held().OverlapsSet(&rel); still {
		before := x.Held().Clone()
		if err := x.Release(&rel, s.free); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("second release: %v", err)
		}
		if !before.Equal(x.Held()) {
			t.Fatal("failed release changed the held bytes")
		}
	}
	s.owned.Remove(ranges.Range{Lo: lo, Hi: hi})
	bs := make([]bool, runN)
	for b := lo; b < hi; b++ {
		m.held[b] = true
		bs[b] = true
	}
	if s.mode.Whole() {
		m.pieces = append(m.pieces, bs)
	}
	m.settle()
	return fmt.Sprintf("release [%d, %d)", lo, hi), true
}

// complete completes a prefix of one engine; false when it has nothing
// in flight.
func (s *modelRun) complete() (string, bool) {
	e := s.r.IntN(runEngines)
	if s.completed[e] == s.submitted[e] {
		return "", false
	}
	s.completed[e] += sasync.Seq(1 + s.r.IntN(int(s.submitted[e]-s.completed[e])))
	s.x.Complete(&s.completed, s.free)
	for id, u := range s.m.users {
		if !u.unknown && u.ev.Seq <= s.completed[u.ev.Engine] {
			delete(s.m.users, id)
		}
	}
	s.m.settle()
	return fmt.Sprintf("complete to %v", s.completed[:runEngines]), true
}

// take takes for a writer at a random point.
func (s *modelRun) take() string {
	t, m := s.t, s.m
	var point sasync.Clock
	for e := 0; e < runEngines; e++ {
		point[e] = sasync.Seq(s.r.IntN(int(s.submitted[e]) + 1))
	}
	completed := s.completed
	safe := func(ev sasync.Event) bool { return ev.Seq <= point[ev.Engine] || ev.Seq <= completed[ev.Engine] }
	size := int64(1 + s.r.IntN(96))
	w, fence, ok := takeBestFit(s.x, size, safe, s.free)
	what := fmt.Sprintf("take %d at %v -> %v %v", size, point[:runEngines], w, ok)
	if !ok {
		return what
	}
	if !s.mode.Fenced() {
		t.Fatalf("take succeeded in mode %v", s.mode)
	}
	if w.Lo%runG != 0 || w.Len() < size || w.Len()%runG != 0 {
		t.Fatalf("%s: bad window", what)
	}
	for b := w.Lo; b < w.Hi; b++ {
		if !m.held[b] {
			t.Fatalf("%s: byte %d was not held", what, b)
		}
		m.held[b] = false
		for _, u := range m.users {
			if u.bytes[b] && (u.unknown || !safe(u.ev)) {
				t.Fatalf("%s: byte %d pinned by unsafe user %v", what, b, u.ev)
			}
			if u.bytes[b] && !fence.Covers(u.ev) {
				t.Fatalf("%s: fence %v misses user %v", what, fence, u.ev)
			}
		}
		for _, p := range m.pieces {
			p[b] = false
		}
	}
	m.settle()
	return what
}

// check compares the Index with the model after a step, and gives the
// bytes it returned back to the program.
func (s *modelRun) check(step int, what string) {
	t, x, m := s.t, s.x, s.m
	if err := x.CheckInvariants(); err != nil {
		t.Fatalf("step %d (%s): %v", step, what, err)
	}
	want := toSet(m.held)
	if !want.Equal(x.Held()) {
		t.Fatalf("step %d (%s): held %v, model %v", step, what, x.Held().Runs(), want.Runs())
	}
	if x.Pending() != len(m.users) {
		t.Fatalf("step %d (%s): %d pending, model %d", step, what, x.Pending(), len(m.users))
	}
	for _, rg := range s.freedNow {
		for b := rg.Lo; b < rg.Hi; b++ {
			if !m.freed[b] {
				t.Fatalf("step %d (%s): freed byte %d the model keeps", step, what, b)
			}
			m.freed[b] = false
		}
	}
	for b, f := range m.freed {
		if f {
			t.Fatalf("step %d (%s): model freed byte %d, index did not", step, what, b)
		}
	}
	// Returned bytes are the program's again (the arena re-issues them).
	for _, rg := range s.freedNow {
		s.owned.Add(rg)
	}
}

func TestBadCalls(t *testing.T) {
	if _, err := New(3, SubrangeAfterUsers); !errors.Is(err, ErrInvalidGranule) {
		t.Fatalf("granule 3: %v", err)
	}
	x, _ := New(16, SubrangeAfterUsers)
	if _, err := x.AddUser(sasync.Event{Seq: 1}, false, []ranges.Range{{Lo: 5, Hi: 5}}); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("empty run: %v", err)
	}
	if _, err := x.AddUser(sasync.Event{Seq: 1}, false, []ranges.Range{{Lo: 0, Hi: 8}, {Lo: 4, Hi: 12}}); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("overlapping runs: %v", err)
	}
	if _, err := x.AddUser(sasync.Event{Engine: 99, Seq: 1}, false, []ranges.Range{{Lo: 0, Hi: 8}}); !errors.Is(err, sasync.ErrUnknownEngine) {
		t.Fatalf("bad engine: %v", err)
	}
	if err := x.RemoveUser(0, func(ranges.Range) {}); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("unknown user: %v", err)
	}
	if x.Pending() != 0 || x.keys != 0 || x.empty != 0 {
		t.Fatal("bad calls changed the index")
	}
	if err := x.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyKeysSwept: keys of completed users stay for reuse but are swept
// once they outnumber the live ones, so the tree does not grow without bound.
func TestEmptyKeysSwept(t *testing.T) {
	x, _ := New(16, SubrangeAfterUsers)
	var c sasync.Clock
	for i := 0; i < 5000; i++ {
		ev := sasync.Event{Seq: sasync.Seq(i + 1)}
		if _, err := x.AddUser(ev, false, []ranges.Range{{Lo: int64(i), Hi: int64(i) + 8}}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			c[0] = ev.Seq
			x.Complete(&c, func(ranges.Range) { t.Fatal("nothing is held") })
		}
		if i%97 == 0 {
			if err := x.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if x.keys > 600 {
		t.Fatalf("%d keys left after 5000 distinct completed users", x.keys)
	}
	// A reused run finds its key: no new key.
	before := x.keys
	ev := sasync.Event{Seq: 5001}
	if _, err := x.AddUser(ev, false, []ranges.Range{{Lo: 4999, Hi: 5007}}); err != nil {
		t.Fatal(err)
	}
	if x.keys != before {
		t.Fatalf("reused run added a key: %d -> %d", before, x.keys)
	}
	if err := x.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestPendingBytes compares the one-pass union with sets built user by user.
func TestPendingBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	x, _ := New(16, SubrangeAfterUsers)
	for i := 0; i < 400; i++ {
		e := sasync.EngineID(r.IntN(3))
		unknown := r.IntN(10) == 0
		if _, err := x.AddUser(sasync.Event{Engine: e, Seq: sasync.Seq(i + 1)}, unknown, randomRuns(r, 4096)); err != nil {
			t.Fatal(err)
		}
		if i%7 != 0 {
			continue
		}
		var all ranges.Set
		var per [sasync.MaxEngines]ranges.Set
		for j := range x.users {
			u := &x.users[j]
			for _, rg := range u.runs() {
				all.Add(rg)
				if !u.unknown {
					per[u.ev.Engine].Add(rg)
				}
			}
		}
		total, perEngine := x.PendingBytes()
		if total != all.Len() {
			t.Fatalf("step %d: total %d, want %d", i, total, all.Len())
		}
		for e := range per {
			if perEngine[e] != per[e].Len() {
				t.Fatalf("step %d: engine %d: %d, want %d", i, e, perEngine[e], per[e].Len())
			}
		}
	}
}

// takeBestFit drives SafeRuns and TakeRanges as a writer would: the smallest
// safe run that holds size bytes (rounded up to the granule), at its lowest
// offset. It reports false when no safe run is large enough, or in a mode
// that does not take.
func takeBestFit(x *Index, size int64, safe func(sasync.Event) bool, free func(ranges.Range)) (ranges.Range, sasync.Clock, bool) {
	if size <= 0 {
		return ranges.Range{}, sasync.Clock{}, false
	}
	size = (size + x.granule - 1) &^ (x.granule - 1)
	best := ranges.Range{}
	for _, r := range x.SafeRuns(nil, safe) {
		if r.Len() >= size && (best.Empty() || r.Len() < best.Len()) {
			best = r
		}
	}
	if best.Empty() {
		return ranges.Range{}, sasync.Clock{}, false
	}
	w := ranges.Range{Lo: best.Lo, Hi: best.Lo + size}
	fence, err := x.TakeRanges([]ranges.Range{w}, free)
	return w, fence, err == nil
}

// TestModes: the five modes and what each says; an undefined mode is refused.
func TestModes(t *testing.T) {
	cases := []struct {
		m             Mode
		name          string
		whole, fenced bool
	}{
		{SubrangeAfterUsers, "subrange-after-users", false, false},
		{SubrangeFenced, "subrange-fenced", false, true},
		{WholeAfterUsers, "whole-after-users", true, false},
		{WholeFenced, "whole-fenced", true, true},
		{IROrder, "ir-order", false, false},
	}
	for _, c := range cases {
		if c.m.String() != c.name || c.m.Whole() != c.whole || c.m.Fenced() != c.fenced || !c.m.Valid() {
			t.Errorf("%v: name %q whole %v fenced %v valid %v", c.m, c.m.String(), c.m.Whole(), c.m.Fenced(), c.m.Valid())
		}
	}
	if _, err := New(16, numModes); !errors.Is(err, ErrInvalidMode) {
		t.Fatalf("undefined mode: %v", err)
	}
}
