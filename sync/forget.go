package sync

import (
	"github.com/subarena/subarena/internal/invariants"
)

// Forget lets the Timeline drop the clocks of completed ops, so that its
// memory stays bounded however long it runs: on every engine, every
// completed op except the engine's last submitted one becomes forgotten,
// and whole chunks of forgotten clocks are released for reuse by later
// submissions. It returns how many clocks it released. Call it now and
// then (for example every few thousand completions); it costs
// O(MaxEngines) plus the chunks it drops.
//
// What forgetting changes, and what it does not:
//
//   - Completion, Point and SafeFor answers never change. A forgotten op has
//     completed, and so has everything that happens-before it, so
//     max(p.Clock[e], completed[e]) is the same with or without the
//     forgotten op's ancestry.
//   - Submit and HostSync accept forgotten events: they order after the
//     event and after every op completed at that moment, which includes
//     the event's forgotten ancestry, so no ordering an allocator relies on
//     is lost (a buffer handed over fenced stays usable by an op that waits
//     for a forgotten op ordered after the fence).
//   - EventClock(ev) and HappensBefore(a, ev) fail with ErrForgotten for a
//     forgotten ev. An op submitted waiting for a forgotten op happens-after
//     every op that had completed by then: each of those did finish before
//     it could start.
//   - Complete on a forgotten op fails with ErrAlreadyCompleted, as before.
func (t *Timeline) Forget() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if invariants.Enabled {
		defer t.verifyLocked()
	}
	released := 0
	for e := 0; e < t.n; e++ {
		h := &t.hist[e]
		upTo := t.completed[e]
		if upTo >= h.n && h.n > 0 {
			upTo = h.n - 1
		}
		released += h.forget(upTo, &t.spare)
	}
	return released
}

// Retain makes the Timeline forget as it goes, so that its memory stays
// bounded by what is pending with no call to Forget: from now on every
// Complete forgets, on every engine, the completed ops more than keep
// behind the engine's last completed one, dropping their clocks a chunk
// (512 ops) at a time, amortized O(1) per Complete. Forgetting is what
// Forget does (see there), so the last keep completed ops of each engine
// and every op completed since still answer EventClock and HappensBefore.
// keep 0 stops forgetting as Complete goes (the default of a new
// Timeline); New of package subarena turns it on for the Allocator's
// Timeline (DefaultRetain) unless it is already on. A history then holds
// at most keep + 2·512 clocks per engine besides the ops not yet
// completed, and 64 spare chunks.
func (t *Timeline) Retain(keep Seq) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if invariants.Enabled {
		defer t.verifyLocked()
	}
	t.retain = keep
	if keep > 0 {
		t.retireLocked()
	}
}

// Retained returns the keep of the last Retain, 0 if forgetting as
// Complete goes is off.
func (t *Timeline) Retained() Seq {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.retain
}

// DefaultRetain is the keep package subarena's New passes to Retain: 4096
// completed ops per engine (512 KiB of clocks per engine at most).
const DefaultRetain Seq = 4096

// retireLocked is Retain's forgetting on every engine, run when Retain
// sets a keep; Complete runs it on the engines whose completed seq grew,
// the only ones it can find something new on (Forget only raises what
// there is to drop). t.mu is held.
func (t *Timeline) retireLocked() {
	for e := range t.n {
		t.retireEngineLocked(e)
	}
}

// retireEngineLocked forgets engine e's completed ops more than retain
// behind its last completed one once they fill a whole chunk beyond the
// dropped ones. t.retain > 0; t.mu is held.
func (t *Timeline) retireEngineLocked(e int) {
	h := &t.hist[e]
	done := t.completed[e]
	if done < t.retain+h.base+chunkLen {
		return // no whole chunk to drop yet
	}
	upTo := done - t.retain
	if upTo >= h.n {
		upTo = h.n - 1
	}
	h.forget(upTo, &t.spare)
}

// Forgotten returns the last forgotten seq of engine e (0 if none, or if e
// is unknown): ops of e with seq <= Forgotten(e) have no clock any more.
func (t *Timeline) Forgotten(e EngineID) Seq {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(e) >= t.n {
		return 0
	}
	return t.hist[e].floor
}
