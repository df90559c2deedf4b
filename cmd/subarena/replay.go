package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/replay"
)

// replayJSON is the object replay --json prints.
type replayJSON struct {
	Trace       string      `json:"trace"`
	Policy      string      `json:"policy"`
	HWM         int64       `json:"hwm"`
	LiveLB      int64       `json:"live_lb"`
	Overhead    float64     `json:"overhead"`
	PendingPeak int64       `json:"pending_peak"`
	Waited      int         `json:"waited"`
	Donated     int         `json:"donated"`
	Buffers     int         `json:"buffers"`
	Ops         int         `json:"ops"`
	Makespan    int64       `json:"makespan"`
	Plan        *trace.Plan `json:"plan"`
}

func init() {
	var (
		policy, planOut, perfettoOut string
		asJSON, noDonate             bool
	)
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a trace against the Allocator on simulated engines",
		Long: `replay runs the trace's host program against the Allocator (unbounded arena) under
one release policy, simulating the engines, and reports the high-water mark, the lower
bound LiveLB, the overhead HWM/LiveLB - 1, the peak of pending bytes and the plan.

-o writes the plan (subarena-plan/v1), --perfetto the timeline; each says "wrote PATH" on
standard error. One of them may be "-", standard output, and the report then goes to
standard error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			docOnStdout, err := stdoutDoc(map[string]string{"-o": planOut, "--perfetto": perfettoOut})
			if err != nil {
				return err
			}
			pol, err := subarena.ParsePolicy(policy)
			if err != nil {
				return err
			}
			p, res, err := replayFile(args[0], replay.Options{Policy: pol, NoDonate: noDonate})
			if err != nil {
				return err
			}
			if planOut != "" {
				if err := writeFile(cmd, planOut, func(w io.Writer) error { return trace.WritePlan(w, res.Plan) }); err != nil {
					return err
				}
			}
			if perfettoOut != "" {
				if err := writeFile(cmd, perfettoOut, func(w io.Writer) error {
					return replay.WritePerfetto(w, res, p.Trace.Engines)
				}); err != nil {
					return err
				}
			}
			out := reportTo(cmd, docOnStdout)
			if asJSON {
				return printJSON(out, replayJSON{Trace: res.Trace, Policy: res.Policy.String(), HWM: res.HWM,
					LiveLB: res.LiveLB, Overhead: res.Overhead, PendingPeak: res.PendingPeak, Waited: res.Waited,
					Donated: res.Donated, Buffers: res.Buffers, Ops: res.Ops, Makespan: res.Makespan, Plan: res.Plan})
			}
			fmt.Fprintf(out, "trace         %s\n", checked.Text(res.Trace))
			fmt.Fprintf(out, "policy        %s\n", res.Policy)
			fmt.Fprintf(out, "buffers       %d\nops           %d\n", res.Buffers, res.Ops)
			fmt.Fprintf(out, "hwm           %d B\n", res.HWM)
			fmt.Fprintf(out, "live_lb       %d B\n", res.LiveLB)
			fmt.Fprintf(out, "overhead      %.4f\n", res.Overhead)
			fmt.Fprintf(out, "pending_peak  %d B\n", res.PendingPeak)
			fmt.Fprintf(out, "waited        %d allocations took bytes whose users had not completed\n", res.Waited)
			fmt.Fprintf(out, "donated       %d\n", res.Donated)
			fmt.Fprintf(out, "makespan      %d\n", res.Makespan)
			return nil
		},
	}
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "release policy: "+policyNames())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringVarP(&planOut, "output", "o", "", `write the plan (subarena-plan/v1) to this file ("-": standard output)`)
	cmd.Flags().StringVar(&perfettoOut, "perfetto", "", `write a Chrome trace / Perfetto JSON timeline to this file ("-": standard output)`)
	cmd.Flags().BoolVar(&noDonate, "no-donate", false, "do not place in-place outputs over dying inputs")
	rootCmd.AddCommand(cmd)
}

// replayOptions parses the policy and the fit a command's --policy and --fit name.
func replayOptions(policy, fit string) (replay.Options, error) {
	pol, err := subarena.ParsePolicy(policy)
	if err != nil {
		return replay.Options{}, err
	}
	f, err := arena.ParseFit(fit)
	if err != nil {
		return replay.Options{}, err
	}
	return replay.Options{Policy: pol, Fit: f}, nil
}

// replayUnder replays p under the named policy and fit.
func replayUnder(p *trace.Program, policy, fit string) (*replay.Result, error) {
	opts, err := replayOptions(policy, fit)
	if err != nil {
		return nil, err
	}
	return replay.Run(p, opts)
}

// replayFile loads the trace file at path and replays it with opts.
func replayFile(path string, opts replay.Options) (*trace.Program, *replay.Result, error) {
	p, err := loadProgram(path)
	if err != nil {
		return nil, nil, err
	}
	res, err := replay.Run(p, opts)
	return p, res, err
}

// policyPlan returns the plan a replay of p under the named policy (and the default
// fit) makes.
func policyPlan(p *trace.Program, policy string) (*trace.Plan, error) {
	res, err := replayUnder(p, policy, "")
	if err != nil {
		return nil, err
	}
	return res.Plan, nil
}

func policyNames() string {
	s := ""
	for i, p := range subarena.Policies() {
		if i > 0 {
			s += ", "
		}
		s += p.String()
	}
	return s
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
