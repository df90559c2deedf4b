package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/trace/replay"
)

// progressDelay is how long a run goes before a progress bar appears.
const progressDelay = 1500 * time.Millisecond

func init() {
	var (
		quick, asJSON, noFirstFit, checkAll, noProgress, waitReuse bool
		parallel                                                   int
		outDir, timelineWorkload, fitName                          string
		workloads, policies, fits                                  []string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the built-in peak-vs-fragmentation matrix and draw it",
		Long: `bench generates the built-in workloads (llama, llama-engines, batching, cnn-concat,
random), replays each under every release policy with each arena fit strategy, places it
with the first-fit baseline, and prints one row per cell: the high-water mark (HWM), the
lower bound LiveLB, the overhead HWM/LiveLB - 1, the external fragmentation at the peak,
the peak of pending bytes, allocations per second of the whole run (simulation included)
and of the time spent inside the Allocator's and its Timeline's calls alone, and safety
(ir-order and first-fit plans are run through the checker; UNSAFE rows give its violation
count).

It writes DIR/bench.svg (peak and fragmentation per workload and policy),
DIR/timeline.svg (the memory timeline of one workload under subrange-fenced) and
DIR/bench.html (one self-contained report: the table and both pictures inline), and says
"wrote PATH" on standard error for each. No input is needed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := bench.MatrixOptions{Quick: quick, Workloads: workloads, NoFirstFit: noFirstFit, CheckAll: checkAll,
				Parallel: parallel, WaitReuse: waitReuse}
			for _, name := range policies {
				p, err := subarena.ParsePolicy(name)
				if err != nil {
					return err
				}
				opts.Policies = append(opts.Policies, p)
			}
			for _, name := range fits {
				f, err := arena.ParseFit(name)
				if err != nil {
					return err
				}
				opts.Fits = append(opts.Fits, f)
			}
			if parallel < 0 {
				return fmt.Errorf("--parallel %d: want 0 (one cell per CPU) or more", parallel)
			}
			// Validate the timeline workload and the output directory before the long run.
			tw, err := bench.LookupWorkload(timelineWorkload, quick)
			if err != nil {
				return err
			}
			if outDir != "" {
				if err := checkWritableDir(outDir); err != nil {
					return err
				}
			}
			stop := startProgress(cmd.ErrOrStderr(), noProgress, &opts)
			m, err := bench.RunMatrix(opts)
			stop()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				err = m.WriteJSON(out)
			} else {
				err = m.WriteTable(out)
			}
			if err != nil {
				return err
			}
			if outDir == "" {
				return nil
			}
			plotFit := fitName
			if plotFit == "" {
				plotFit = "lean"
				if len(opts.Fits) > 0 {
					plotFit = opts.Fits[0].String()
				}
			}
			var peak, timeline bytes.Buffer
			if err := m.WritePeakSVG(&peak, plotFit); err != nil {
				return err
			}
			if err := timelineSVG(&timeline, tw); err != nil {
				return err
			}
			for _, f := range []struct {
				name string
				data []byte
			}{{"bench.svg", peak.Bytes()}, {"timeline.svg", timeline.Bytes()}} {
				if err := writeFile(cmd, filepath.Join(outDir, f.name), func(w io.Writer) error {
					_, err := w.Write(f.data)
					return err
				}); err != nil {
					return err
				}
			}
			return writeFile(cmd, filepath.Join(outDir, "bench.html"), func(w io.Writer) error {
				return m.WriteHTML(w,
					bench.Picture{Caption: "HWM / LiveLB and fragmentation at the peak, per workload and policy (fit " +
						plotFit + ")", SVG: peak.Bytes()},
					bench.Picture{Caption: "memory timeline of " + tw.Name + " under subrange-fenced", SVG: timeline.Bytes()})
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&quick, "quick", false, "small workload settings (seconds; for CI)")
	f.BoolVar(&asJSON, "json", false, "print the matrix as JSON instead of a table")
	f.StringVarP(&outDir, "output", "o", ".", `directory for bench.svg, timeline.svg and bench.html ("" writes none)`)
	f.StringSliceVar(&workloads, "workload", nil, "workloads to run (default: all)")
	f.StringSliceVar(&policies, "policy", nil, "policies to run (default: all): "+policyNames())
	f.StringSliceVar(&fits, "fit", nil, "arena fit strategies (default: fast,lean)")
	f.StringVar(&fitName, "plot-fit", "", "fit strategy whose cells bench.svg shows (default: lean, or the first --fit)")
	f.StringVar(&timelineWorkload, "timeline", "llama-engines", "workload drawn in timeline.svg")
	f.BoolVar(&noFirstFit, "no-first-fit", false, "leave out the first-fit baseline rows")
	f.BoolVar(&waitReuse, "wait-reuse", false, "add rows for the fenced policies with wait-fenced reuse (policy+wait): allocs also take bytes whose users end before the buffer's ops start, and those ops wait for them; checked against the trace with the added waits")
	f.BoolVar(&checkAll, "check-all", false, "run the plan checker on every cell (slow; safe policies must show none)")
	f.BoolVar(&noProgress, "no-progress", false, "never show a progress bar")
	f.IntVar(&parallel, "parallel", 0, "cells run at once (0: one per CPU; 1 for clean allocs/s)")
	rootCmd.AddCommand(cmd)
}

// startProgress installs a progress callback that shows a bar on w once
// the run has taken progressDelay, if w is a terminal; stop finishes it.
func startProgress(w io.Writer, disabled bool, opts *bench.MatrixOptions) (stop func()) {
	if disabled || !isTerminal(w) {
		return func() {}
	}
	start := time.Now()
	var bar *progressbar.ProgressBar
	opts.Progress = func(done, total int) {
		if bar == nil {
			if time.Since(start) < progressDelay {
				return
			}
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("bench"),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
				progressbar.OptionSetWidth(30))
		}
		_ = bar.Set(done)
	}
	return func() {
		if bar != nil {
			_ = bar.Finish()
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// timelineSVG replays workload w under subrange-fenced and draws its timeline to out.
func timelineSVG(out io.Writer, w bench.Workload) error {
	t, err := w.Build()
	if err != nil {
		return err
	}
	p, err := t.Resolve()
	if err != nil {
		return err
	}
	res, err := replay.Run(p, replay.Options{Policy: subarena.SubrangeFenced})
	if err != nil {
		return err
	}
	tl, err := bench.ReplayTimeline(p, res)
	if err != nil {
		return err
	}
	return tl.WriteSVG(out)
}

// checkWritableDir makes dir if it is missing and checks that a file can be created in
// it, so that bench fails before its run, not after.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-o %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".bench-*.tmp")
	if err != nil {
		return fmt.Errorf("-o %s: cannot write there: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
