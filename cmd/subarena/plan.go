package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/minimalloc"
	"github.com/subarena/subarena/trace/plan"
	"github.com/subarena/subarena/trace/replay"
	"github.com/subarena/subarena/trace/tracefile"
)

func init() {
	var (
		out, traceOut, reorderedOut            string
		asJSON, noInPlace, noRelayout, reorder bool
		budget                                 = plan.DefaultBudget
	)
	cmd := &cobra.Command{
		Use:   "plan FILE [--budget D] [--json] [-o PLAN] [--reorder --reordered-out TRACE]",
		Short: "Plan an arena offline, knowing every future use",
		Long: `plan places every buffer of the trace in FILE at a fixed offset, knowing the whole
graph ahead (as a compiler, or an engine that plans once and replays). Each byte lives from
its first use to its last use and the step that lets it go; an inplace op's output may take
the bytes of a same-shape input that dies at that op, strided ones included. The best of
several greedy placements comes first; a MiniMalloc-style search then lowers it within
--budget. The plan is never higher than the online replay's and always passes
check FILE PLAN.

An output placed over a strided input (the gate half of a fused gate/up product) has no
offset of its own: the plan lays it over that footprint of its host under "placements"
({"of": HOST, "offset": O, "shape": [..], "strides": [..], "elem": S}), which check
honours. --no-relayout plans with offsets only; --trace-out also writes FILE rewritten
with each placed buffer a view of its host, for tools that read offsets only.

--reorder also plans the trace with its ops reordered (one engine only: memory-aware list
scheduling that keeps every data dependency and wait) and keeps the reordered plan when
neither its lower bound nor its size is above the input order's. The plan is then for the
reordered trace, which --reordered-out writes (the input itself when its order is kept)
and --trace-out rewrites: check that trace with the plan. The report gives both orders' bounds and sizes, and
order_bound, which no plan of any order of the ops is below.

Each file written is reported as "wrote PATH" on standard error. One of -o and
--trace-out may be "-", standard output; the report then goes to standard error. --json
prints the plan itself on standard output, so it cannot be combined with an output "-".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			docOnStdout, err := stdoutDoc(map[string]string{"-o": out, "--trace-out": traceOut, "--reordered-out": reorderedOut})
			if err != nil {
				return err
			}
			if docOnStdout && asJSON {
				return fmt.Errorf("--json prints the plan on standard output, and so does an output \"-\": use one")
			}
			if reorderedOut != "" && !reorder {
				return fmt.Errorf("--reordered-out needs --reorder")
			}
			data, format, err := readInput(args[0])
			if err != nil {
				return err
			}
			stop := make(chan struct{})
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt)
			defer signal.Stop(sig)
			go func() {
				if _, ok := <-sig; ok {
					close(stop)
				}
			}()
			name := inputName(args[0])
			// The online replay runs beside the planner, which keeps its plan when
			// lower; the Watch keeps the replay's own figures for the report.
			var watch replay.Watch
			// The plan is checked before it is written, as the command promises
			// (check FILE PLAN passes).
			opts := plan.Options{Budget: budget, NoInPlace: noInPlace, NoRelayout: noRelayout, Stop: stop,
				Replay: watch.Online, Check: true}
			var (
				res plan.Result
				ro  plan.Reordered
			)
			if format == minimalloc.Format {
				// A MiniMalloc CSV: plan it on its own time axis.
				mm, err := minimalloc.Parse(data)
				if err != nil {
					return inFile(args[0], err)
				}
				res, err = plan.PlanMiniMalloc(mm, name, opts)
				if err != nil {
					return inFile(args[0], err)
				}
				ro = plan.Reordered{Fixed: res, Skipped: "a MiniMalloc problem has no ops to reorder"}
			} else {
				p, err := tracefile.ReadProgram(bytes.NewReader(data), name)
				if err != nil {
					return inFile(args[0], err)
				}
				if reorder {
					if ro, err = plan.PlanReordered(p, opts); err != nil {
						return inFile(args[0], err)
					}
					res = ro.Chosen()
				} else if res, err = plan.PlanProgram(p, opts); err != nil {
					return inFile(args[0], err)
				}
			}
			doc, err := res.Document()
			if err != nil {
				return err
			}
			replayHWM, replayErr := watch.Outcome(res.Trace)
			doc.ReplayHWM = replayHWM
			if out != "" {
				if err := writeFile(cmd, out, doc.Write); err != nil {
					return err
				}
			}
			if traceOut != "" {
				if err := writeRewritten(cmd, traceOut, res); err != nil {
					return err
				}
			}
			if reorderedOut != "" {
				if err := writeFile(cmd, reorderedOut, func(w io.Writer) error { return trace.Write(w, res.Trace) }); err != nil {
					return err
				}
			}
			w := reportTo(cmd, docOnStdout)
			if asJSON {
				return doc.Write(w)
			}
			gap := 0.0
			if res.LowerBound > 0 {
				gap = float64(res.Plan.Size)/float64(res.LowerBound) - 1
			}
			fmt.Fprintf(w, "trace         %s\n", checked.Text(res.Plan.Trace))
			fmt.Fprintf(w, "buffers       %d\n", len(res.Plan.Offsets)+len(res.Plan.Placements))
			fmt.Fprintf(w, "size          %d B\n", res.Plan.Size)
			fmt.Fprintf(w, "lower_bound   %d B (size/bound - 1 = %.4f, proven optimal: %v)\n", res.LowerBound, gap, res.Proven)
			if res.LowerBound > res.LiveBound {
				fmt.Fprintf(w, "live_bound    %d B (most bytes live at once; holes raise the bound above it)\n", res.LiveBound)
			}
			if replayHWM > 0 {
				fmt.Fprintf(w, "replay_hwm    %d B\n", replayHWM)
			} else if replayErr != nil {
				fmt.Fprintf(w, "replay_hwm    - (%v)\n", replayErr)
			}
			fmt.Fprintf(w, "method        %s\n", res.Method)
			fmt.Fprintf(w, "in_place      %d buffers (%d placed over strided inputs)\n", res.InPlace, len(res.Relaid))
			fmt.Fprintf(w, "first_ms      %.3f (the first valid placement, before any search)\n", float64(res.FirstPlan.Microseconds())/1000)
			fmt.Fprintf(w, "ms            %.3f\n", res.Plan.Ms)
			if reorder {
				reportReorder(w, ro)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&budget, "budget", plan.DefaultBudget, "search time below the best greedy placement (0: greedy only)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan (subarena-plan/v1) as JSON")
	cmd.Flags().StringVarP(&out, "output", "o", "", `write the plan (subarena-plan/v1) to this file ("-": standard output)`)
	cmd.Flags().StringVar(&traceOut, "trace-out", "", `also write FILE rewritten with every placed buffer a view of its host (the plan's offsets alone fit it; "-": standard output)`)
	cmd.Flags().BoolVar(&noInPlace, "no-inplace", false, "place every buffer on bytes of its own")
	cmd.Flags().BoolVar(&noRelayout, "no-relayout", false, "place in place over dense inputs only: offsets, no placements")
	cmd.Flags().BoolVar(&reorder, "reorder", false, "also plan the ops reordered to lower the peak; keep that plan when it is not above the input order's")
	cmd.Flags().StringVar(&reorderedOut, "reordered-out", "", `with --reorder, write the trace the plan is for: reordered, or the input when its order is kept ("-": standard output)`)
	rootCmd.AddCommand(cmd)
}

// writeRewritten writes res's trace rewritten so that its plan needs no placements.
func writeRewritten(cmd *cobra.Command, path string, res plan.Result) error {
	p, err := res.Trace.Resolve()
	if err != nil {
		return err
	}
	t, _, err := trace.ViewPlacements(p, res.Plan)
	if err != nil {
		return err
	}
	return writeFile(cmd, path, func(w io.Writer) error { return trace.Write(w, t) })
}

// reportReorder prints what --reorder found.
func reportReorder(w io.Writer, ro plan.Reordered) {
	f := ro.Fixed
	fmt.Fprintf(w, "fixed_order   size %d B, lower_bound %d B\n", f.Plan.Size, f.LowerBound)
	if r := ro.Best; r != nil {
		kept := "kept"
		if !ro.Kept {
			kept = "not kept: the input order's plan is as low"
		}
		fmt.Fprintf(w, "reordered     size %d B, lower_bound %d B (rule %v, %d of %d ops moved; %s)\n", r.Plan.Size, r.LowerBound,
			ro.Reordering.Rule, moved(ro.Reordering.Order), len(ro.Reordering.Order), kept)
	} else {
		fmt.Fprintf(w, "reordered     - (%s)\n", ro.Skipped)
	}
	if ro.OrderBound > 0 {
		fmt.Fprintf(w, "order_bound   %d B (no plan of any order of the ops is below it)\n", ro.OrderBound)
	}
}

// moved counts the ops not at their input position.
func moved(order []int) int {
	n := 0
	for i, k := range order {
		if i != k {
			n++
		}
	}
	return n
}
