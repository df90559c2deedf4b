package subarena

import (
	"github.com/subarena/subarena/liveness"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Snapshot is a consistent copy of what an Allocator's memory looks like at
// one moment, taken under its lock: the figures of Stats, the clean runs of
// the arena, the held runs (released or discarded, waiting to return) and
// the pending users. It shares nothing with the Allocator; tools that show
// the Allocator's state step by step (the scenario interpreter of package
// fuzz/scenario, a debugger) read it instead of its internals.
type Snapshot struct {
	Stats Stats
	// Free and Held are in address order and share no byte.
	Free, Held []ranges.Range
	// Pending lists each pending user once, in no particular order.
	Pending []PendingUser
}

// PendingUser is one pending user of a Snapshot: the event whose completion
// lets its bytes go, or Unknown for a Reservation's user (never assumed
// finished).
type PendingUser struct {
	Event   sasync.Event
	Unknown bool
}

// Snapshot returns a copy of the Allocator's state. It walks every free
// region, held run and pending user: O(state), for tools, not hot paths
// (Stats is the O(1) summary).
func (a *Allocator) Snapshot() Snapshot {
	st := a.Stats()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Snapshot{Stats: st}
	for _, b := range a.ar.AppendFreeRegions(nil) {
		s.Free = append(s.Free, ranges.Range{Lo: b.Offset, Hi: b.End()})
	}
	s.Held = append(s.Held, a.idx.Held().Runs()...)
	seen := make(map[liveness.UserID]bool)
	a.idx.Users(ranges.Range{Lo: 0, Hi: max(a.ar.Capacity(), 1)}, func(id liveness.UserID, ev sasync.Event, unknown bool) bool {
		if !seen[id] {
			seen[id] = true
			s.Pending = append(s.Pending, PendingUser{Event: ev, Unknown: unknown})
		}
		return true
	})
	return s
}
