package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/minimalloc"
)

func init() {
	var (
		out, format, planPath, policy string
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE -o OUT",
		Short: "Convert a trace (MiniMalloc CSV, ggml, subarena JSON) to subarena-trace/v1 or MiniMalloc CSV",
		Long: `import reads FILE in any supported format and writes it to OUT as a subarena-trace/v1
document, or, with --format minimalloc (the default when OUT ends in .csv), as a MiniMalloc
CSV whose times are op positions, with an offset column when --plan or --policy gives
offsets: from the plan file, or from a replay under the policy. A subarena-trace/v1
document has no offsets, so --plan and --policy are an error without --format
minimalloc.

OUT "-" is standard output; the summary then goes to standard error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("%w: -o OUT is required", trace.ErrMissingKey)
			}
			if format == "" {
				format = "trace"
				if strings.EqualFold(filepath.Ext(out), ".csv") {
					format = "minimalloc"
				}
			}
			if format != "trace" && format != "minimalloc" {
				return fmt.Errorf("%w: --format %q (want trace or minimalloc)", trace.ErrFormat, format)
			}
			offsets := planPath != "" || cmd.Flags().Changed("policy")
			if format == "trace" && offsets {
				return fmt.Errorf("--plan and --policy give offsets, which only a MiniMalloc CSV carries: " +
					"add --format minimalloc (or name OUT *.csv), or leave them out")
			}
			if planPath != "" && cmd.Flags().Changed("policy") {
				return fmt.Errorf("--plan and --policy both give offsets: choose one")
			}
			p, err := loadProgram(args[0])
			if err != nil {
				return err
			}
			t := p.Trace
			switch format {
			case "trace":
				err = writeFile(cmd, out, func(w io.Writer) error { return trace.Write(w, t) })
			case "minimalloc":
				var plan *trace.Plan
				switch {
				case planPath != "":
					plan, err = loadPlan(planPath)
				case cmd.Flags().Changed("policy"):
					plan, err = policyPlan(p, policy)
				}
				if err != nil {
					return err
				}
				if plan != nil {
					if err := trace.CheckPlan(p, plan); err != nil {
						return inFile(planPath, err)
					}
				}
				err = writeFile(cmd, out, func(w io.Writer) error { return minimalloc.Write(w, p, plan) })
			}
			if err != nil {
				return err
			}
			report := reportTo(cmd, out == "-")
			if asJSON {
				return printJSON(report, map[string]any{"trace": t.Name, "format": format, "out": out,
					"buffers": p.NumAllocs(), "ops": len(p.Ops), "steps": len(t.Steps)})
			}
			fmt.Fprintf(report, "%s: %d steps, %d buffers, %d ops -> %s (%s)\n",
				checked.Text(t.Name), len(t.Steps), p.NumAllocs(), len(p.Ops), checked.Text(out), format)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (- for standard output)")
	cmd.Flags().StringVar(&format, "format", "", "output format: trace or minimalloc (default from OUT's extension)")
	cmd.Flags().StringVar(&planPath, "plan", "", "minimalloc: take offsets from this plan (error with --format trace)")
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "minimalloc: take offsets from a replay under this policy (error with --format trace)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON summary")
	rootCmd.AddCommand(cmd)
}
