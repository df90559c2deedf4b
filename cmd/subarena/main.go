// Command subarena replays, checks, imports and plans allocation traces.
//
// Every command that takes a trace FILE reads a subarena-trace/v1 JSON document, a
// MiniMalloc CSV or a ggml graph-allocator trace, detected by content (trace.Load).
// Each subcommand lives in its own file and registers itself with rootCmd in an init
// function, so commands are added by adding files.
//
// Exit status: 0 on success, 1 when check finds violations, 2 on bad input or any other
// failure.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// rootCmd is the subarena command; subcommands add themselves to it in init functions.
var rootCmd = &cobra.Command{
	Use:   "subarena",
	Short: "Subrange-granular arena allocation: replay, check, import and plan traces",
	Long: `subarena replays allocation traces against the subrange-granular Allocator on
simulated engines, checks whether a plan is safe, converts between trace formats and
plans arenas offline.

FILE arguments may be subarena-trace/v1 JSON, MiniMalloc CSV or ggml-alloc-trace/1 JSON;
the format is detected by content.`,
	SilenceUsage:  true,
	SilenceErrors: true,
}

// exitError carries a process exit status with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode maps a command's error to the process exit status: an *exitError says its
// own, anything else is bad input or a failure (2).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 2
}

func main() {
	err := rootCmd.Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "subarena:", err)
	}
	os.Exit(exitCode(err))
}
