package replay

import (
	"fmt"
	"sync"

	"github.com/subarena/subarena/trace"
)

// Online is the online replay the planner compares its plans with: pass it as
// plan.Options.Replay (package trace/plan). It runs Run with the default Options (the
// subrange-fenced policy, donation on), ending early with an error matching
// trace.ErrStopped when stop is closed, and returns the replay's plan, whose Size is the
// Allocator's high-water mark.
func Online(p *trace.Program, stop <-chan struct{}) (*trace.Plan, error) {
	res, err := Run(p, Options{Stop: stop})
	if err != nil {
		return nil, err
	}
	return res.Plan, nil
}

// Watch runs Online for a planner and keeps what each replay returned, so that the
// caller that wants the replay's figures beside the plan (the CLI's plan command)
// reads them from the replay it passed instead of from the plan: pass w.Online as
// plan.Options.Replay, then ask Outcome for the trace a Result is for. The zero
// value is ready to use; a Watch is safe for the concurrent calls a planner makes.
type Watch struct {
	mu   sync.Mutex
	runs map[*trace.Trace]*watched
}

// watched is one replay a Watch saw.
type watched struct {
	stop <-chan struct{} // the planner's stop for it: closed once the planner gave it up
	done bool            // the replay returned: hwm and err are its answer
	hwm  int64
	err  error
}

// Online runs Online on p and records its high-water mark or its error under
// p.Trace.
func (w *Watch) Online(p *trace.Program, stop <-chan struct{}) (*trace.Plan, error) {
	run := &watched{stop: stop}
	w.mu.Lock()
	if w.runs == nil {
		w.runs = map[*trace.Trace]*watched{}
	}
	w.runs[p.Trace] = run
	w.mu.Unlock()
	pl, err := Online(p, stop)
	w.mu.Lock()
	run.done, run.err = true, err
	if err == nil && pl != nil {
		run.hwm = pl.Size
	}
	w.mu.Unlock()
	return pl, err
}

// Outcome returns the high-water mark of the replay of t (the trace a plan.Result
// is for), or 0 and why there is none: the replay's error, or, for a replay the
// planner gave up (it had not returned, or the planner had closed its stop, when
// the planner returned and Outcome is asked), an error matching trace.ErrStopped.
// A trace the Watch never replayed has neither (0, nil).
func (w *Watch) Outcome(t *trace.Trace) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	run := w.runs[t]
	if run == nil {
		return 0, nil
	}
	select {
	case <-run.stop:
		return 0, fmt.Errorf("the planner gave the online replay up (its budget ended or it was stopped): %w", trace.ErrStopped)
	default:
	}
	if !run.done {
		return 0, fmt.Errorf("the online replay did not finish while the planner ran: %w", trace.ErrStopped)
	}
	return run.hwm, run.err
}
