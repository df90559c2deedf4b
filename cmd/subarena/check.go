package main

import (
	"fmt"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/check"
)

func init() {
	var (
		policy string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "check FILE [PLAN]",
		Short: "Check whether a plan is safe for a trace",
		Long: `check decides whether PLAN (subarena-plan/v1 JSON, or a MiniMalloc CSV with an offset
column) is safe for the trace in FILE: for every byte two buffers share, every op using it
through the buffer that lets it go first must happen-before every op using it through the
other. Each violation is listed with the bytes, both ops and engines, the view chain of
each, and the missing happens-before edge. Without PLAN, the plan replay produces under
--policy is checked.

A buffer the plan lays over a strided footprint of another ("placements", as plan writes
for in-place outputs over strided inputs) is checked as a view of that host: the host and
the buffers over it share one release, and within them every op using a byte through an
earlier buffer must happen-before every op using it through a later one.

Exit status: 0 safe, 1 violations, 2 bad input.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProgram(args[0])
			if err != nil {
				return err
			}
			var plan *trace.Plan
			if len(args) == 2 {
				plan, err = loadPlan(args[1])
			} else {
				plan, err = policyPlan(p, policy)
			}
			if err != nil {
				return err
			}
			rep, err := check.Plan(p, plan)
			if err != nil {
				if len(args) == 2 {
					return inFile(args[1], err)
				}
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if rep.Violations == nil {
					rep.Violations = []check.Violation{}
				}
				if err := printJSON(out, rep); err != nil {
					return err
				}
			} else if rep.Safe {
				fmt.Fprintf(out, "safe: %s, %d buffer pairs share bytes, every shared byte is ordered\n", checked.Text(rep.Trace), rep.Pairs)
			} else {
				fmt.Fprintf(out, "UNSAFE: %s: %d violations\n", checked.Text(rep.Trace), len(rep.Violations))
				for _, v := range rep.Violations {
					fmt.Fprintln(out, "  "+checked.Text(v.String()))
				}
			}
			if !rep.Safe {
				return &exitError{code: 1, err: fmt.Errorf("%w: %d violations", trace.ErrUnsafe, len(rep.Violations))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "without PLAN: replay under this policy and check its plan")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	rootCmd.AddCommand(cmd)
}
