package subarena

import (
	"errors"
	"fmt"

	sasync "github.com/subarena/subarena/sync"
)

// SpaceWait says how AllocWaiting waits when nothing fits.
type SpaceWait struct {
	// Executor runs the program's ops; the host waits through it.
	Executor *sasync.Executor
	// Engines are those whose last op is waited for when a NoSpaceError
	// names no event the host may wait for.
	Engines []sasync.EngineID
	// Waitable says whether the host may block on an engine's work; nil
	// means every engine.
	Waitable func(sasync.EngineID) bool
	// Stalled, when not nil, is called each time nothing fits, before the
	// wait, with the number of attempts that failed before this one.
	Stalled func(attempt int)
}

// mayWait says whether w lets the host block on engine e's work.
func (w *SpaceWait) mayWait(e sasync.EngineID) bool { return w.Waitable == nil || w.Waitable(e) }

// wait is AllocWaiting's wait. It blocks the host, through w.Executor,
// until the work ns names has completed and every subscriber of the
// Executor's Timeline (the Allocator that returned ns among them) has seen
// it, so that retrying the allocation finds the bytes it frees: the event
// ns.Wait when ns names one on an engine w.Waitable allows, else the last
// op of every engine in w.Engines that still has work in flight. seen is
// the Timeline's DeliveredClock from before the allocation that failed
// with ns.
//
// It reports true when a retry may succeed: it waited, or some completion
// (ns.Wait's among them) has been delivered. It reports false, with no
// error, when there is nothing left to wait for: ns names no event the
// host may wait for, every such last op has completed and been seen, and
// nothing was delivered after the failed allocation, so the live set does
// not fit and retrying fails again. An error is the Executor's Wait's.
func (w *SpaceWait) wait(ns *NoSpaceError, seen *sasync.Clock) (bool, error) {
	x := w.Executor
	tl := x.Timeline()
	if ns.HasWait && w.mayWait(ns.Wait.Engine) {
		if tl.Delivered(ns.Wait) {
			return true, nil // the Allocator has seen it: retry at once
		}
		return true, x.Wait(ns.Wait)
	}
	waited := false
	for _, e := range w.Engines {
		last := sasync.Event{Engine: e, Seq: tl.Submitted(e)}
		if tl.Delivered(last) || !w.mayWait(e) {
			continue
		}
		if err := x.Wait(last); err != nil {
			return false, err
		}
		waited = true
	}
	if waited {
		return true, nil
	}
	// Work that completed between the failed allocation and now (an
	// engine the Stalled hook let run, say) has given bytes back already.
	now := tl.DeliveredClock()
	return !now.LessEq(seen), nil
}

// AllocWaiting returns a buffer of size bytes for a writer at engine e's
// next point, as Alloc does. When nothing fits it blocks the host through
// w.Executor until the work the *NoSpaceError names has completed (its
// Wait event, when it has one on an engine w.Waitable allows; else the
// last op of every engine in w.Engines with work in flight) and the
// Allocator has seen that completion, then tries again at e's new point.
//
// It returns the last *NoSpaceError once there is nothing left to wait
// for (the live set does not fit). A request larger than every free and
// held byte together (larger than the capacity, or than the capacity less
// the bytes the program holds, which no completion frees) gets its
// *NoSpaceError at once, after one Stalled and no wait. An error of the
// Executor's wait, and any other error of Alloc, is returned at once. A
// nil w.Executor, or one running another Timeline than the Allocator's,
// is an error matching ErrInvalidWait.
func (a *Allocator) AllocWaiting(size int64, e sasync.EngineID, w SpaceWait) (*Buffer, error) {
	if w.Executor == nil || w.Executor.Timeline() != a.tl {
		return nil, fmt.Errorf("alloc waiting: %w: the executor must run the Allocator's Timeline", ErrInvalidWait)
	}
	for attempt := 0; ; attempt++ {
		seen := a.tl.DeliveredClock()
		pt, err := a.tl.Point(e)
		if err != nil {
			return nil, err
		}
		b, err := a.Alloc(size, pt)
		var ns *NoSpaceError
		if !errors.As(err, &ns) {
			return b, err
		}
		if w.Stalled != nil {
			w.Stalled(attempt)
		}
		if ns.Requested > ns.TotalFree+ns.Held {
			// Only free and held bytes can ever be reused: no completion
			// makes room for this request.
			return nil, err
		}
		progress, werr := w.wait(ns, &seen)
		if werr != nil {
			return nil, werr
		}
		if !progress {
			return nil, err
		}
	}
}
