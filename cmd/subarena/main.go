// Command subarena replays, checks, imports and plans allocation traces, and runs
// scenario scripts (package trace/scenario) against the Allocator.
//
// Every command that takes a trace FILE reads a subarena-trace/v1 JSON document, a
// MiniMalloc CSV or a ggml graph-allocator trace, detected by content (tracefile.Load).
// Each subcommand lives in its own file and registers itself with rootCmd in an init
// function, so commands are added by adding files.
//
// Exit status: 0 on success, 1 when check finds violations (or viz draws a plan that
// check rejects), 2 on bad input or any other failure.
//
// Standard output carries what a command produces; standard error carries notes,
// warnings, "wrote PATH" lines for the files a command writes, and a failing command's
// error, as one line starting "subarena: ". When a command writes a document to standard
// output (an output path "-"), its report goes to standard error too, so that standard
// output is that document alone.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/tracefile"
)

// rootCmd is the subarena command; subcommands add themselves to it in init functions.
var rootCmd = &cobra.Command{
	Use:   "subarena",
	Short: "Subrange-granular arena allocation: replay, check, import and plan traces",
	Long: `subarena replays allocation traces against the subrange-granular Allocator on
simulated engines, checks whether a plan is safe, converts between trace formats and
plans arenas offline.

FILE arguments may be subarena-trace/v1 JSON, MiniMalloc CSV or ggml-alloc-trace/1 JSON;
the format is detected by content. The scenario command reads scenario scripts instead.`,
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
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the root command with args, its standard output and standard error going
// to stdout and stderr, prints a failing command's error on stderr (errorLine), and
// returns the exit status.
func execute(args []string, stdout, stderr io.Writer) int {
	rootCmd.SetArgs(args)
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	err := rootCmd.Execute()
	if err != nil {
		fmt.Fprintln(stderr, errorLine(err))
	}
	return exitCode(err)
}

// errorLine renders err as one line with one "subarena: " prefix (errors of the
// subarena package start with their own, which is not repeated).
func errorLine(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	for strings.HasPrefix(msg, "subarena: ") {
		msg = strings.TrimPrefix(msg, "subarena: ")
	}
	return "subarena: " + msg
}

// inFile names the file an error came from, unless the error names it already (an
// *fs.PathError from opening it) or there is no file.
func inFile(path string, err error) error {
	var pe *fs.PathError
	if err == nil || path == "" || errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// loadProgram loads and resolves a trace file in any supported format (resolving it
// once: loading validates it by resolving, and that Program is the one returned). Path
// "-" is standard input.
func loadProgram(path string) (*trace.Program, error) {
	data, _, err := readInput(path)
	if err != nil {
		return nil, err
	}
	p, err := tracefile.ReadProgram(bytes.NewReader(data), inputName(path))
	if err != nil {
		return nil, inFile(path, err)
	}
	return p, nil
}

// readInput reads the document at path ("-": standard input) and detects its format
// (tracefile.ReadDocument): binary or endless input is refused after its first bytes,
// and any input above trace.MaxDocumentSize once it passes the limit. Errors name the
// file.
func readInput(path string) (data []byte, format string, err error) {
	var r io.Reader = rootCmd.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		r = f
	}
	data, format, err = tracefile.ReadDocument(r)
	if err != nil {
		return nil, "", inFile(path, err)
	}
	return data, format, nil
}

// inputName is the name a trace read from path gets when its format has no name of its
// own (a CSV, a ggml trace): the file's base name without its extension, or "stdin".
func inputName(path string) string {
	if path == "-" {
		return "stdin"
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// loadPlan reads a plan file (subarena-plan/v1 or a MiniMalloc CSV with offsets); errors
// name the file. A file that is neither (not a JSON object, not a MiniMalloc CSV) is
// refused with what it looks like, as a trace file would be. Path "-" is standard input.
func loadPlan(path string) (*trace.Plan, error) {
	var r io.Reader = rootCmd.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := tracefile.ReadPlanDocument(r)
	if err != nil {
		return nil, inFile(path, err)
	}
	if trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		if _, err := tracefile.Detect(data); err != nil {
			what := strings.TrimPrefix(err.Error(), trace.ErrUnknownFormat.Error()+": ")
			return nil, fmt.Errorf("%s: not a subarena-plan/v1 plan or MiniMalloc CSV solution: %s", path, what)
		}
	}
	plan, err := tracefile.ReadPlan(bytes.NewReader(data), inputName(path))
	return plan, inFile(path, err)
}

// stdoutDoc reports whether any of paths is "-": a document goes to standard output,
// so the command's report must not. More than one such path is an error.
func stdoutDoc(paths map[string]string) (bool, error) {
	var flags []string
	for flag, path := range paths {
		if path == "-" {
			flags = append(flags, flag)
		}
	}
	if len(flags) > 1 {
		slices.Sort(flags)
		return true, fmt.Errorf("%s all name standard output (-); at most one document can go there",
			strings.Join(flags, " and "))
	}
	return len(flags) == 1, nil
}

// reportTo is where a command's report goes: standard output, or standard error when a
// document goes to standard output.
func reportTo(cmd *cobra.Command, docOnStdout bool) io.Writer {
	if docOnStdout {
		return cmd.ErrOrStderr()
	}
	return cmd.OutOrStdout()
}

// writeFile creates path and fills it with write, then says so on standard error;
// "-" is the command's standard output.
func writeFile(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(cmd.OutOrStdout())
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
	return nil
}
