package main

import (
	"io"

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
lifetimes are drawn as whole-after-users implies them. A buffer the plan lays over a
strided footprint of its host (a placement) is drawn at that footprint's runs inside the
host, outlined with a dashed border, from its first op on.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProgram(args[0])
			if err != nil {
				return err
			}
			var tl *bench.Timeline
			if planPath != "" {
				plan, err := trace.LoadPlan(planPath)
				if err != nil {
					return err
				}
				if tl, err = bench.PlanTimeline(p, plan); err != nil {
					return err
				}
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
			if out == "-" {
				return tl.WriteSVG(cmd.OutOrStdout())
			}
			return writeFile(out, func(w io.Writer) error { return tl.WriteSVG(w) })
		},
	}
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "release policy: "+policyNames())
	cmd.Flags().StringVar(&fit, "fit", "default", "arena fit strategy: default, fast or lean")
	cmd.Flags().StringVar(&planPath, "plan", "", "draw this subarena-plan/v1 file instead of replaying")
	cmd.Flags().StringVarP(&out, "output", "o", "timeline.svg", `SVG file to write ("-": standard output)`)
	rootCmd.AddCommand(cmd)
}
