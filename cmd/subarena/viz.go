package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
)

// vizFlags are viz's options.
type vizFlags struct {
	policy, fit, planPath, out string
	html                       bool
	comparePolicy, comparePlan string
}

func init() {
	var fl vizFlags
	cmd := &cobra.Command{
		Use:   "viz FILE",
		Short: "Draw the memory timeline of a replay (or of a plan) as SVG, or as an interactive HTML page",
		Long: `viz replays the trace in FILE under --policy and draws its memory timeline as a static
SVG picture, in the manner of PyTorch's memory viewer: x is the host step (program order),
y the arena offset, one rectangle per live piece coloured by buffer, bytes the program has
let go but whose users are still pending hatched, and the high-water mark drawn.

With --plan, the offsets come from that subarena-plan/v1 file instead of a replay, and
lifetimes are drawn as whole-after-users implies them; the picture is titled by the plan
(its file, the policy or planner it names, its size). A buffer the plan lays over a
strided footprint of its host (a placement) is drawn at that footprint's runs inside the
host, outlined with a dashed border, from its first op on.

The plan is checked as check FILE PLAN would check it. A plan that does not fit the trace
is an error (exit 2, nothing drawn). A plan that fits but is unsafe is still drawn, so
that its overlaps can be looked at, but viz warns on standard error, listing the
violations, and exits with check's status for an unsafe plan, 1.

With --html, viz writes one self-contained HTML page instead (script and style inline,
nothing loaded from the network; it opens from disk): the same timeline on a canvas,
with zoom and pan on both axes, and a description of any piece under the pointer — its
buffer and bytes, the view whose discard lets it go, the ops using it or, while it is
pending, the uses pinning it with their engine, event and view chain to the buffer, the
fence, and when it becomes clean. Clicking a piece or searching a name selects a buffer.
The run is checked as check would check it, and its violations are drawn: the bytes both
buffers reach, the reader and the writer with their view chains, and the missing edge.
A replay with violations (ir-order) is drawn with a warning and exit status 0; an unsafe
plan exits 1 as above. --compare POLICY adds a second run, a replay under POLICY, and
--compare-plan PLAN a second plan, on the same time axis, each with its HWM and LiveLB
(the bound of layouts that give every buffer an offset: a plan laying buffers over
strided footprints of others can be below it, and its panel says so).

The output goes to -o ("wrote PATH" on standard error; timeline.svg, or timeline.html
with --html), or to standard output with -o -.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fl.html {
				opts := fl
				if !cmd.Flags().Changed("output") {
					opts.out = "timeline.html"
				}
				return vizHTML(cmd, args[0], opts)
			}
			if fl.comparePolicy != "" || fl.comparePlan != "" {
				return errors.New("--compare and --compare-plan need --html (the SVG draws one run)")
			}
			return vizSVG(cmd, args[0], fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.policy, "policy", subarena.SubrangeFenced.String(), "release policy: "+policyNames())
	f.StringVar(&fl.fit, "fit", "default", "arena fit strategy: default, fast or lean")
	f.StringVar(&fl.planPath, "plan", "", "draw this subarena-plan/v1 file instead of replaying (checked first: exit 1 if unsafe)")
	f.StringVarP(&fl.out, "output", "o", "timeline.svg", `file to write ("-": standard output; timeline.html with --html)`)
	f.BoolVar(&fl.html, "html", false, "write an interactive, self-contained HTML page instead of an SVG")
	f.StringVar(&fl.comparePolicy, "compare", "", "with --html: draw a replay under this policy too, on the same time axis")
	f.StringVar(&fl.comparePlan, "compare-plan", "", "with --html: draw this plan too, on the same time axis")
	rootCmd.AddCommand(cmd)
}

// vizSVG draws one run as an SVG picture.
func vizSVG(cmd *cobra.Command, file string, fl vizFlags) error {
	p, err := loadProgram(file)
	if err != nil {
		return err
	}
	var (
		tl     *bench.Timeline
		unsafe *check.Report
	)
	if fl.planPath != "" {
		plan, rep, err := checkedPlan(p, fl.planPath)
		if err != nil {
			return err
		}
		if !rep.Safe {
			unsafe = rep
		}
		if tl, err = bench.PlanTimeline(p, plan); err != nil {
			return inFile(fl.planPath, err)
		}
		tl.Policy = planTitle(fl.planPath, plan)
	} else {
		res, err := replayUnder(p, fl.policy, fl.fit)
		if err != nil {
			return err
		}
		if tl, err = bench.ReplayTimeline(p, res); err != nil {
			return err
		}
	}
	if err := writeFile(cmd, fl.out, func(w io.Writer) error { return tl.WriteSVG(w) }); err != nil {
		return err
	}
	return unsafePlans(cmd, file, []string{fl.planPath}, []*check.Report{unsafe})
}

// checkedPlan loads the plan at path and checks it against p; a plan that does not fit
// p is an error naming the file.
func checkedPlan(p *trace.Program, path string) (*trace.Plan, *check.Report, error) {
	plan, err := loadPlan(path)
	if err != nil {
		return nil, nil, err
	}
	rep, err := check.Plan(p, plan)
	if err != nil {
		return nil, nil, inFile(path, err)
	}
	return plan, rep, nil
}

// unsafePlans warns on standard error about each plan drawn although check rejects it
// (reps[i] non-nil and unsafe for the plan at paths[i]) and returns check's status for
// an unsafe plan, 1; nil when every plan drawn is safe.
func unsafePlans(cmd *cobra.Command, file string, paths []string, reps []*check.Report) error {
	var last error
	for i, rep := range reps {
		if rep == nil || rep.Safe {
			continue
		}
		w := cmd.ErrOrStderr()
		fmt.Fprintf(w, "warning: plan %s is UNSAFE for %s: %d violations (drawn anyway):\n", checked.Text(paths[i]), checked.Text(file),
			len(rep.Violations))
		for _, v := range rep.Violations {
			fmt.Fprintln(w, "  "+checked.Text(v.String()))
		}
		last = &exitError{code: 1, err: fmt.Errorf("%s: %w: %d violations", paths[i], trace.ErrUnsafe, len(rep.Violations))}
	}
	return last
}

// planTitle names a plan in a timeline's title, which reads "under <this>": the plan's
// file, the policy or planner it names, and its size.
func planTitle(path string, plan *trace.Plan) string {
	s := "plan " + filepath.Base(path)
	if plan.Policy != "" {
		s += ", policy " + plan.Policy
	}
	return fmt.Sprintf("%s, size %d B", s, plan.Size)
}
