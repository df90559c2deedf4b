package main

import (
	"io"

	"github.com/spf13/cobra"
	subarena "github.com/subarena/subarena"
	"github.com/subarena/subarena/trace/replay"
)

func init() {
	var policy, fit, out string
	cmd := &cobra.Command{
		Use:   "perfetto FILE",
		Short: "Write a replay as a Chrome trace / Perfetto JSON timeline",
		Long: `perfetto replays the trace in FILE under --policy and writes the result in the Chrome
trace event format, which ui.perfetto.dev and chrome://tracing open: one track per engine
with every op a slice over its simulated run (one cost unit is shown as one millisecond),
and counters of the arena's in-use, pending and high-water bytes. It says "wrote PATH" on
standard error ("-o -" writes to standard output instead).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := replayOptions(policy, fit)
			if err != nil {
				return err
			}
			p, res, err := replayFile(args[0], opts)
			if err != nil {
				return err
			}
			return writeFile(cmd, out, func(w io.Writer) error { return replay.WritePerfetto(w, res, p.Trace.Engines) })
		},
	}
	cmd.Flags().StringVar(&policy, "policy", subarena.SubrangeFenced.String(), "release policy: "+policyNames())
	cmd.Flags().StringVar(&fit, "fit", "default", "arena fit strategy: default, fast or lean")
	cmd.Flags().StringVarP(&out, "output", "o", "trace.json", `JSON file to write ("-": standard output)`)
	rootCmd.AddCommand(cmd)
}
