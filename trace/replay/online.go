package replay

import "github.com/subarena/subarena/trace"

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
