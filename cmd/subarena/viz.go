package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace"
)

func init() {
	var policy, fit, planPath, out string
	cmd := &cobra.Command{
		Use:   "viz FILE",
		Short: "Draw the memory timeline of a replay (or of a plan) as SVG",
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

The SVG goes to -o ("wrote PATH" on standard error), or to standard output with -o -.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProgram(args[0])
			if err != nil {
				return err
			}
			var (
				tl     *bench.Timeline
				unsafe *trace.Report
			)
			if planPath != "" {
				plan, err := loadPlan(planPath)
				if err != nil {
					return err
				}
				rep, err := trace.Check(p, plan)
				if err != nil {
					return inFile(planPath, err)
				}
				if !rep.Safe {
					unsafe = rep
				}
				if tl, err = bench.PlanTimeline(p, plan); err != nil {
					return inFile(planPath, err)
				}
				tl.Policy = planTitle(planPath, plan)
			} else {
				pol, err := subarena.ParsePolicy(policy)
				if err != nil {
					return err
				}
				f, err := arena.ParseFit(fit)
				if err != nil {
					return err
				}
				res, err := trace.Replay(p, trace.ReplayOptions{Policy: pol, Fit: f})
				if err != nil {
					return err
				}
				if tl, err = bench.ReplayTimeline(p, res); err != nil {
					return err
				}
			}
			if err := writeFile(cmd, out, func(w io.Writer) error { return tl.WriteSVG(w) }); err != nil {
				return err
			}
			if unsafe == nil {
				return nil
			}
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "warning: plan %s is UNSAFE for %s: %d violations (drawn anyway):\n", planPath, args[0],
				len(unsafe.Violations))
			for _, v := range unsafe.Violations {
				fmt.Fprintln(w, "  "+v.String())
			}
			return &exitError{code: 1, err: fmt.Errorf("%s: %w: %d violations", planPath, trace.ErrUnsafe, len(unsafe.Violations))}
		},
	}
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "release policy: "+policyNames())
	cmd.Flags().StringVar(&fit, "fit", "default", "arena fit strategy: default, fast or lean")
	cmd.Flags().StringVar(&planPath, "plan", "", "draw this subarena-plan/v1 file instead of replaying (checked first: exit 1 if unsafe)")
	cmd.Flags().StringVarP(&out, "output", "o", "timeline.svg", `SVG file to write ("-": standard output)`)
	rootCmd.AddCommand(cmd)
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
