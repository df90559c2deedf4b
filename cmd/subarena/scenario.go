package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/subarena/subarena/fuzz/scenario"
)

func init() {
	var check, write bool
	cmd := &cobra.Command{
		Use:   "scenario FILE...",
		Short: "Run scenario scripts against the Allocator (or check their expected outputs)",
		Long: `scenario runs each FILE, a scenario script (the format of package fuzz/scenario, as in
testdata/scenarios and fuzz/scenario/seeds: a command line, "----", the expected output,
a blank line), against the Allocator: every "new" starts a fresh Allocator and Timeline,
and the Allocator's invariants are checked after every command. It prints the script with
each command's actual output in place of the expected one (preceded by "=== FILE" when
there is more than one FILE), so the output is itself a scenario file.

--check prints nothing for a file whose outputs all match; for each command whose output
differs (or that has none) it prints FILE:LINE, the command and both outputs, then a
count. -w writes the actual outputs back into the files instead of printing them.

Exit status: 0 success (with --check: every output matches), 1 an output differs,
2 bad input (a syntax error or an unknown name, reported as FILE:LINE) or a broken
invariant.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check && write {
				return fmt.Errorf("--check and -w exclude each other")
			}
			out := cmd.OutOrStdout()
			differ, total := 0, 0
			for _, path := range args {
				f, err := scenario.ParseFile(path)
				if err != nil {
					return err
				}
				outs, err := scenario.Run(f)
				if err != nil {
					return err
				}
				switch {
				case write:
					if err := replaceFile(path, func(w io.Writer) error {
						_, err := w.Write(f.Format(outs))
						return err
					}); err != nil {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
				case check:
					total += len(outs)
					differ += reportDiffs(out, f, outs)
				default:
					if len(args) > 1 {
						fmt.Fprintf(out, "=== %s\n", path)
					}
					if _, err := out.Write(f.Format(outs)); err != nil {
						return err
					}
				}
			}
			if differ > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d commands differ from their expected output", differ, total)}
			}
			if check {
				fmt.Fprintf(out, "ok: %d commands in %d files\n", total, len(args))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "compare each command's output with the expected output in the file")
	cmd.Flags().BoolVarP(&write, "write", "w", false, "write the actual outputs back into the files")
	rootCmd.AddCommand(cmd)
}

// reportDiffs prints each block of f whose output differs from outs and returns how many.
func reportDiffs(w io.Writer, f *scenario.File, outs []string) int {
	n := 0
	for i, b := range f.Blocks {
		if outs[i] == b.Want && b.HasWant {
			continue
		}
		n++
		want := b.Want
		if !b.HasWant {
			want = "(no expected output)"
		}
		fmt.Fprintf(w, "%s:%d: %s\n--- got\n%s\n--- want\n%s\n\n", f.Name, b.Line, b.Cmd.Text, outs[i], want)
	}
	return n
}
