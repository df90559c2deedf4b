package bench

import (
	"fmt"
	"math"
	"runtime"
	stdsync "sync"
	"time"

	"golang.org/x/sync/errgroup"

	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
	"github.com/subarena/subarena/trace/replay"
)

// FitFirstFit is the Fit column of the FirstFit baseline's rows.
const FitFirstFit = "first-fit"

// MatrixOptions selects what RunMatrix runs. The zero value runs the full
// settings of every workload under all five policies, with both arena fit
// strategies and the FirstFit baseline.
type MatrixOptions struct {
	// Quick selects the small workload settings (tests, CI).
	Quick bool
	// Workloads names the workloads to run (nil: all, in order).
	Workloads []string
	// Policies to run (nil: subarena.Policies()).
	Policies []subarena.Policy
	// Fits are the arena strategies (nil: arena.FitFast and arena.FitLean).
	Fits []arena.Fit
	// NoFirstFit leaves out the FirstFit baseline rows.
	NoFirstFit bool
	// WaitReuse adds, for each fenced policy and fit, a cell replayed with
	// wait-fenced reuse (replay.Options.WaitReuse): allocs also take held
	// bytes whose users end, in the schedule, before the buffer's ops can
	// start, and those ops wait for them. Such cells are always checked,
	// against the trace with the added waits.
	WaitReuse bool
	// CheckAll runs the plan checker on every cell, not only on the
	// ir-order cells (an expensive self-test: safe policies must show no
	// violation).
	CheckAll bool
	// Progress, when set, is called after each cell with the number of
	// cells done and the total (never concurrently).
	Progress func(done, total int)
	// Parallel bounds the cells run at once (0: GOMAXPROCS). Cells run in
	// parallel measure allocations per second under contention; use 1 for
	// clean rates.
	Parallel int
}

// Cell is one measurement: a workload replayed under one policy with one
// fit strategy (or placed by the FirstFit baseline).
type Cell struct {
	Workload string `json:"workload"`
	Policy   string `json:"policy"`
	// Fit is the arena's strategy ("fast", "lean") or FitFirstFit.
	Fit string `json:"fit"`
	// HWM is the arena size the run needed; LiveLB the lower bound no safe
	// allocator placing buffers at offsets beats on the same schedule
	// (check.LiveLowerBound); Overhead = HWM/LiveLB − 1.
	HWM      int64   `json:"hwm"`
	LiveLB   int64   `json:"live_lb"`
	Overhead float64 `json:"overhead"`
	// Fragmentation is the external fragmentation (1 − largest free /
	// total free within [0, HWM)) right after the step that first reached
	// HWM; NaN (null in JSON) when it could not be rebuilt exactly.
	Fragmentation float64 `json:"fragmentation_at_peak"`
	// PendingPeak is the most bytes pending users covered at once (0 for
	// the baseline, which does not track users).
	PendingPeak int64 `json:"pending_peak"`
	// HeldPeak is the most bytes the host program held at once
	// (replay.Result.HeldPeak): no allocator running the workload's host
	// program needs less, so HWM/LiveLB cannot go below HeldPeak/LiveLB
	// (0 for the baseline rows).
	HeldPeak int64 `json:"held_peak"`
	// Allocs is the number of buffers placed; AllocsPerSec is Allocs over
	// RunSeconds, the wall time of the whole run (replay or placement,
	// simulation and per-step statistics included).
	Allocs       int     `json:"allocs"`
	AllocsPerSec float64 `json:"allocs_per_sec"`
	RunSeconds   float64 `json:"run_seconds"`
	// AllocatorSeconds is the part of RunSeconds spent inside the calls the
	// replayed host makes on the Allocator and its Timeline
	// (replay.Result.AllocatorTime); AllocatorAllocsPerSec is Allocs
	// over it: what the allocator itself costs, without the replay's
	// simulation, statistics and analysis. NaN (null in JSON) for the
	// first-fit rows, which use no Allocator.
	AllocatorSeconds      float64 `json:"allocator_seconds"`
	AllocatorAllocsPerSec float64 `json:"allocator_allocs_per_sec"`
	// Checked says the plan checker ran on this cell; Violations is what it
	// found. Safe is the policy's claim (Policy.Safe) and, when checked,
	// the checker's verdict as well.
	Checked    bool `json:"checked"`
	Violations int  `json:"violations"`
	Safe       bool `json:"safe"`
	// WaitReuse marks a cell replayed with wait-fenced reuse
	// (MatrixOptions.WaitReuse); it is checked against the trace with the
	// waits the replay added.
	WaitReuse bool `json:"wait_reuse,omitempty"`
}

// PolicyLabel is the policy, with "+wait" for a WaitReuse cell.
func (c Cell) PolicyLabel() string {
	if c.WaitReuse {
		return c.Policy + "+wait"
	}
	return c.Policy
}

// WorkloadInfo describes one workload of a matrix run.
type WorkloadInfo struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Steps   int    `json:"steps"`
	Buffers int    `json:"buffers"`
	Ops     int    `json:"ops"`
}

// Matrix is the result of RunMatrix.
type Matrix struct {
	Quick     bool           `json:"quick"`
	Workloads []WorkloadInfo `json:"workloads"`
	Cells     []Cell         `json:"cells"`
}

// RunMatrix replays the built-in workloads under every selected policy and
// fit strategy and measures each cell. It returns the first error of any
// generator, replay or checker: the built-in workloads are valid, so an
// error is a defect, not a result.
func RunMatrix(opts MatrixOptions) (*Matrix, error) {
	var ws []Workload
	if opts.Workloads == nil {
		ws = Workloads(opts.Quick)
	} else {
		for _, name := range opts.Workloads {
			w, err := LookupWorkload(name, opts.Quick)
			if err != nil {
				return nil, err
			}
			ws = append(ws, w)
		}
	}
	policies := opts.Policies
	if policies == nil {
		policies = subarena.Policies()
	}
	for _, pol := range policies {
		if !pol.Valid() {
			return nil, fmt.Errorf("%w: policy %v", ErrInvalidWorkload, pol)
		}
	}
	fits := opts.Fits
	if fits == nil {
		fits = []arena.Fit{arena.FitFast, arena.FitLean}
	}
	var ffPolicies []subarena.Policy
	if !opts.NoFirstFit {
		for _, pol := range policies {
			if firstFitModels(pol) {
				ffPolicies = append(ffPolicies, pol)
			}
		}
	}
	m := &Matrix{Quick: opts.Quick}
	// One task per cell, each on its own resolved Program (a Program is not
	// safe for concurrent use), results in fixed slots so the order does
	// not depend on the schedule.
	type task struct {
		w        int
		pol      subarena.Policy
		fit      arena.Fit
		firstFit bool
		wait     bool
	}
	var tasks []task
	traces := make([]*trace.Trace, len(ws))
	for i, w := range ws {
		t, err := w.Build()
		if err != nil {
			return nil, err
		}
		p, err := t.Resolve()
		if err != nil {
			return nil, fmt.Errorf("bench: workload %s: %w", w.Name, err)
		}
		traces[i] = t
		m.Workloads = append(m.Workloads, WorkloadInfo{Name: w.Name, Summary: w.Summary, Steps: len(t.Steps),
			Buffers: p.NumAllocs(), Ops: len(p.Ops)})
		for _, pol := range policies {
			for _, fit := range fits {
				tasks = append(tasks, task{w: i, pol: pol, fit: fit})
			}
		}
		for _, pol := range policies {
			if !opts.WaitReuse || !pol.Fenced() {
				continue
			}
			for _, fit := range fits {
				tasks = append(tasks, task{w: i, pol: pol, fit: fit, wait: true})
			}
		}
		for _, pol := range ffPolicies {
			tasks = append(tasks, task{w: i, pol: pol, firstFit: true})
		}
	}
	m.Cells = make([]Cell, len(tasks))
	var mu stdsync.Mutex
	done := 0
	var g errgroup.Group
	limit := opts.Parallel
	if limit <= 0 {
		limit = runtime.GOMAXPROCS(0)
	}
	g.SetLimit(limit)
	for i, tk := range tasks {
		g.Go(func() error {
			p, err := traces[tk.w].Resolve()
			if err != nil {
				return err
			}
			name := ws[tk.w].Name
			var c Cell
			if tk.firstFit {
				c, err = firstFitCell(name, p, tk.pol)
			} else {
				c, err = replayCell(name, p, tk.pol, tk.fit, tk.wait, opts.CheckAll || !tk.pol.Safe() || tk.wait)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			m.Cells[i] = c
			done++
			if opts.Progress != nil {
				opts.Progress(done, len(tasks))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The schedule, hence LiveLB, is the same under every policy: the
	// first-fit rows take the replays' bound.
	for i := range m.Cells {
		c := &m.Cells[i]
		if c.Fit != FitFirstFit {
			continue
		}
		for _, o := range m.Cells {
			if o.Workload == c.Workload && o.Fit != FitFirstFit {
				c.LiveLB = max(c.LiveLB, o.LiveLB)
			}
		}
		if c.LiveLB > 0 {
			c.Overhead = float64(c.HWM)/float64(c.LiveLB) - 1
		}
	}
	return m, nil
}

// replayCell replays p under one policy and fit (with wait-fenced reuse
// when wait) and measures it.
func replayCell(workload string, p *trace.Program, pol subarena.Policy, fit arena.Fit, wait, checkPlan bool) (Cell, error) {
	start := time.Now()
	res, err := replay.Run(p, replay.Options{Policy: pol, Fit: fit, TimeAllocator: true, WaitReuse: wait})
	if err != nil {
		return Cell{}, fmt.Errorf("bench: %s under %v/%v: %w", workload, pol, fit, err)
	}
	elapsed := time.Since(start)
	frag, _, err := peakFragmentation(p, res)
	if err != nil {
		return Cell{}, fmt.Errorf("bench: %s under %v/%v: %w", workload, pol, fit, err)
	}
	c := Cell{Workload: workload, Policy: pol.String(), Fit: fitName(fit), HWM: res.HWM, LiveLB: res.LiveLB,
		Overhead: res.Overhead, Fragmentation: frag, PendingPeak: res.PendingPeak, HeldPeak: res.HeldPeak, Allocs: res.Buffers,
		AllocsPerSec: perSecond(res.Buffers, elapsed), RunSeconds: elapsed.Seconds(),
		AllocatorSeconds: res.AllocatorTime.Seconds(), AllocatorAllocsPerSec: perSecond(res.Buffers, res.AllocatorTime),
		Safe: pol.Safe(), WaitReuse: wait}
	if checkPlan {
		checked := p
		if wait {
			if checked, err = res.WithWaits(p).Resolve(); err != nil {
				return Cell{}, fmt.Errorf("bench: %s under %v/%v with its waits: %w", workload, pol, fit, err)
			}
		}
		rep, err := check.Plan(checked, res.Plan)
		if err != nil {
			return Cell{}, fmt.Errorf("bench: checking %s under %v/%v: %w", workload, pol, fit, err)
		}
		c.Checked, c.Violations = true, len(rep.Violations)
		c.Safe = c.Safe && rep.Safe
	}
	return c, nil
}

// firstFitCell places p with the FirstFit baseline under pol's lifetimes
// and checks the plan.
func firstFitCell(workload string, p *trace.Program, pol subarena.Policy) (Cell, error) {
	start := time.Now()
	ff, err := FirstFitPlan(p, pol)
	if err != nil {
		return Cell{}, err
	}
	elapsed := time.Since(start)
	rep, err := check.Plan(p, ff.Plan)
	if err != nil {
		return Cell{}, fmt.Errorf("bench: checking %s first-fit/%v: %w", workload, pol, err)
	}
	return Cell{Workload: workload, Policy: pol.String(), Fit: FitFirstFit, HWM: ff.HWM,
		Fragmentation: ff.Fragmentation, Allocs: ff.Allocs, AllocsPerSec: perSecond(ff.Allocs, elapsed),
		RunSeconds: elapsed.Seconds(), AllocatorSeconds: math.NaN(), AllocatorAllocsPerSec: math.NaN(),
		Checked: true, Violations: len(rep.Violations), Safe: rep.Safe}, nil
}

func fitName(f arena.Fit) string {
	if f == arena.FitDefault {
		return "default"
	}
	return f.String()
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return math.Inf(1)
	}
	return float64(n) / d.Seconds()
}

// Find returns the cell of workload, policy and fit (not a WaitReuse one),
// if the matrix has it.
func (m *Matrix) Find(workload, policy, fit string) (Cell, bool) {
	for _, c := range m.Cells {
		if c.Workload == workload && c.Policy == policy && c.Fit == fit && !c.WaitReuse {
			return c, true
		}
	}
	return Cell{}, false
}

// CheckInvariants verifies what every Matrix must satisfy, returning the
// first violation:
//   - every cell names a workload of the matrix, a known policy and a fit;
//   - no two cells share (workload, policy, fit, wait reuse);
//   - byte figures are ≥ 0; a cell the checker found safe and whose
//     policy claims safety has HWM ≥ LiveLB (LiveLB bounds every safe
//     allocator), and Overhead = HWM/LiveLB − 1.
func (m *Matrix) CheckInvariants() error {
	known := map[string]bool{}
	for _, w := range m.Workloads {
		known[w.Name] = true
	}
	seen := map[[3]string]bool{}
	for i, c := range m.Cells {
		if !known[c.Workload] {
			return fmt.Errorf("bench: cell %d names unknown workload %q", i, c.Workload)
		}
		if _, err := subarena.ParsePolicy(c.Policy); err != nil {
			return fmt.Errorf("bench: cell %d: %w", i, err)
		}
		if c.Fit != FitFirstFit {
			if _, err := arena.ParseFit(c.Fit); err != nil {
				return fmt.Errorf("bench: cell %d: %w", i, err)
			}
		}
		key := [3]string{c.Workload, c.PolicyLabel(), c.Fit}
		if seen[key] {
			return fmt.Errorf("bench: two cells for %v", key)
		}
		seen[key] = true
		if c.HWM < 0 || c.LiveLB < 0 || c.PendingPeak < 0 || c.Violations < 0 || c.Allocs < 0 || c.RunSeconds < 0 {
			return fmt.Errorf("bench: cell %v has a negative figure: %+v", key, c)
		}
		if c.Fit != FitFirstFit && !(c.AllocatorSeconds >= 0 && c.AllocatorSeconds <= c.RunSeconds) {
			return fmt.Errorf("bench: cell %v spent %v s in the allocator of a %v s run", key, c.AllocatorSeconds, c.RunSeconds)
		}
		if c.Safe && c.HWM < c.LiveLB {
			return fmt.Errorf("bench: safe cell %v needs %d B, below its lower bound %d B", key, c.HWM, c.LiveLB)
		}
		if c.HeldPeak < 0 || (c.Safe && c.HWM < c.HeldPeak) {
			return fmt.Errorf("bench: safe cell %v needs %d B, below the %d B its program holds at once", key, c.HWM, c.HeldPeak)
		}
		if c.LiveLB > 0 {
			want := float64(c.HWM)/float64(c.LiveLB) - 1
			if math.Abs(c.Overhead-want) > 1e-9 {
				return fmt.Errorf("bench: cell %v overhead %v, want %v", key, c.Overhead, want)
			}
		}
	}
	return nil
}
