package sync

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena/internal/invariants"
)

// ErrInvariant is wrapped by every error CheckInvariants returns.
var ErrInvariant = errors.New("sync: invariant violated")

// CheckInvariants verifies the Timeline's internal consistency and returns
// an error wrapping ErrInvariant describing the first violation found:
//
//   - engines [0, n) have ID i, a unique non-empty name and a valid kind,
//     and the name index matches; engines [n, MaxEngines) are empty;
//   - completed[e] <= submitted[e], delivered[e] <= completed[e], and
//     host[e] <= submitted[e]; the submitted and completed seqs that
//     Status reads without the lock are those;
//   - the clock of op (e, s) has component e equal to s (an event's clock
//     covers itself) and covers no unsubmitted op;
//   - clocks are monotone along an engine: clock(e, s-1) <= clock(e, s);
//   - clocks are transitively closed: for every engine f covered by
//     clock(e, s), clock(f, clock(e, s)[f]) <= clock(e, s);
//   - the completed clock and the host clock are closed under
//     happens-before: clock(e, completed[e]) <= completed, and likewise for
//     host;
//   - forgotten ops have completed, the last op of an engine is never
//     forgotten, and the chunk bookkeeping (stored counts, dropped prefix,
//     spare chunks) is consistent.
//
// The clock checks cover remembered ops only (see Forget), and a
// component pointing at a forgotten op is not followed.
//
// It holds the lock for its whole run, which costs
// O(events · MaxEngines): meant for tests and fuzzers, not hot paths.
func (t *Timeline) CheckInvariants() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checkLocked()
}

// verifyLocked panics with the first broken invariant; in builds with the
// invariants tag every mutator defers it. t.mu must be held.
func (t *Timeline) verifyLocked() { invariants.Hold(t.checkLocked()) }

// checkLocked is CheckInvariants with t.mu held.
func (t *Timeline) checkLocked() error {
	if err := t.checkEnginesLocked(); err != nil {
		return err
	}
	var submitted Clock
	for e := 0; e < MaxEngines; e++ {
		submitted[e] = t.hist[e].n
	}
	for e := 0; e < MaxEngines; e++ {
		if err := t.checkHistoryLocked(EngineID(e), &submitted); err != nil {
			return err
		}
	}
	for e := 0; e < MaxEngines; e++ {
		if s, c := t.submitted[e].Load(), t.completedSeq[e].Load(); s != uint64(submitted[e]) || c != uint64(t.completed[e]) {
			return fmt.Errorf("%w: engine %d: submitted %d and completed %d, published %d and %d", ErrInvariant, e, submitted[e], t.completed[e], s, c)
		}
	}
	if !t.completed.LessEq(&submitted) {
		return fmt.Errorf("%w: completed %v exceeds submitted %v", ErrInvariant, &t.completed, &submitted)
	}
	if !t.delivered.LessEq(&t.completed) {
		return fmt.Errorf("%w: delivered %v exceeds completed %v", ErrInvariant, &t.delivered, &t.completed)
	}
	if !t.host.LessEq(&submitted) {
		return fmt.Errorf("%w: host clock %v exceeds submitted %v", ErrInvariant, &t.host, &submitted)
	}
	if len(t.spare) > maxSpare {
		return fmt.Errorf("%w: %d spare chunks, at most %d", ErrInvariant, len(t.spare), maxSpare)
	}
	for i, ch := range t.spare {
		if len(ch) != 0 || cap(ch) != chunkLen {
			return fmt.Errorf("%w: spare chunk %d has length %d, capacity %d", ErrInvariant, i, len(ch), cap(ch))
		}
	}
	if err := t.checkClosedLocked("completed", &t.completed); err != nil {
		return err
	}
	return t.checkClosedLocked("host", &t.host)
}

func (t *Timeline) checkEnginesLocked() error {
	if t.n < 0 || t.n > MaxEngines {
		return fmt.Errorf("%w: %d engines", ErrInvariant, t.n)
	}
	if len(t.names) != t.n {
		return fmt.Errorf("%w: %d names for %d engines", ErrInvariant, len(t.names), t.n)
	}
	for i := 0; i < MaxEngines; i++ {
		eng := t.engines[i]
		if i >= t.n {
			if eng != (Engine{}) || t.hist[i].n != 0 || t.hist[i].floor != 0 || len(t.hist[i].chunks) != 0 {
				return fmt.Errorf("%w: unused engine slot %d is not empty", ErrInvariant, i)
			}
			continue
		}
		if int(eng.ID) != i || eng.Name == "" || !eng.Kind.Valid() {
			return fmt.Errorf("%w: engine slot %d holds %+v", ErrInvariant, i, eng)
		}
		if id, ok := t.names[eng.Name]; !ok || int(id) != i {
			return fmt.Errorf("%w: name %q maps to %d, want %d", ErrInvariant, eng.Name, id, i)
		}
	}
	return nil
}

// checkHistoryLocked checks the stored clocks of engine e.
func (t *Timeline) checkHistoryLocked(e EngineID, submitted *Clock) error {
	h := &t.hist[e]
	var want int
	for i, ch := range h.chunks {
		if i < len(h.chunks)-1 && len(ch) != chunkLen {
			return fmt.Errorf("%w: engine %d chunk %d holds %d clocks, want %d", ErrInvariant, e, i, len(ch), chunkLen)
		}
		want += len(ch)
	}
	if Seq(want) != h.n-h.base {
		return fmt.Errorf("%w: engine %d stores %d clocks for ops (%d, %d]", ErrInvariant, e, want, h.base, h.n)
	}
	if h.base%chunkLen != 0 || h.base > h.floor || h.floor > t.completed[e] || (h.n > 0 && h.floor >= h.n) {
		return fmt.Errorf("%w: engine %d: base %d, floor %d, completed %d, submitted %d", ErrInvariant, e, h.base, h.floor, t.completed[e], h.n)
	}
	var prev Clock
	for s := h.floor + 1; s <= h.n; s++ {
		c := h.at(s)
		if c[e] != s {
			return fmt.Errorf("%w: clock of %v is %v: does not cover itself exactly", ErrInvariant, Event{e, s}, c)
		}
		if !c.LessEq(submitted) {
			return fmt.Errorf("%w: clock of %v is %v: covers unsubmitted ops (submitted %v)", ErrInvariant, Event{e, s}, c, submitted)
		}
		if !prev.LessEq(c) {
			return fmt.Errorf("%w: clock of %v is %v, below its predecessor's %v", ErrInvariant, Event{e, s}, c, &prev)
		}
		for f, fs := range c {
			if EngineID(f) == e || fs <= t.hist[f].floor {
				continue
			}
			if !t.hist[f].at(fs).LessEq(c) {
				return fmt.Errorf("%w: clock of %v is %v, not closed over %v", ErrInvariant, Event{e, s}, c, Event{EngineID(f), fs})
			}
		}
		prev = *c
	}
	return nil
}

// checkClosedLocked checks that c covers the clock of every op it covers.
func (t *Timeline) checkClosedLocked(name string, c *Clock) error {
	for e, s := range c {
		if s <= t.hist[e].floor {
			continue
		}
		if !t.hist[e].at(s).LessEq(c) {
			return fmt.Errorf("%w: %s clock %v is not closed over %v", ErrInvariant, name, c, Event{EngineID(e), s})
		}
	}
	return nil
}
