// Command subarena replays, checks, imports and plans allocation traces, and runs
// scenario scripts (package fuzz/scenario) against the Allocator.
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
	"github.com/subarena/subarena/internal/checked"
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
// returns the exit status. A failed write to standard output (a full device, a closed
// pipe) fails the command, exit status 2.
func execute(args []string, stdout, stderr io.Writer) int {
	out := &checkedWriter{w: stdout}
	rootCmd.SetArgs(args)
	rootCmd.SetOut(out)
	rootCmd.SetErr(stderr)
	err := rootCmd.Execute()
	if err == nil && out.err != nil {
		err = fmt.Errorf("writing standard output: %w", out.err)
	}
	if err != nil {
		fmt.Fprintln(stderr, errorLine(err))
	}
	return exitCode(err)
}

// errorLine renders err as one line with one "subarena: " prefix (errors of the
// subarena package start with their own, which is not repeated), any control character
// in it escaped (checked.Text).
func errorLine(err error) string {
	msg := checked.Text(strings.ReplaceAll(err.Error(), "\n", " "))
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

// writeFile writes the document write produces to path, then says so on standard
// error; "-" is the command's standard output. A regular file (or a new one) is written
// to a temporary file in its directory, which replaces it only once every write and the
// close have succeeded: a failed write (a full device, a file size limit) leaves the old
// file, or none, never a truncated one. Anything else (a device, a pipe) is written in
// place. Every write is checked: the first error fails the command.
func writeFile(cmd *cobra.Command, path string, write func(io.Writer) error) error {
	if path == "-" {
		return writeChecked(cmd.OutOrStdout(), write)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if err := writeChecked(f, write); err != nil {
			f.Close()
			return writeError(path, err)
		}
		if err := f.Close(); err != nil {
			return writeError(path, err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
		return nil
	}
	if err := replaceFile(path, write); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", path)
	return nil
}

// replaceFile writes a temporary file next to path with write and renames it to path
// once it is whole; on any failure the temporary file is removed and path is untouched.
// The file gets path's mode if path exists, 0644 otherwise; a symbolic link keeps
// pointing at the file, which is replaced.
func replaceFile(path string, write func(io.Writer) error) (err error) {
	mode := os.FileMode(0o644)
	target := path
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			target = resolved // replace the file a link points to, not the link
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return writeError(path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = writeError(path, err)
		}
	}()
	if err := writeChecked(tmp, write); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// writeError names path, the file being written, in err, in place of the file an
// *fs.PathError names (the temporary file, or path itself).
func writeError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("writing %s: %w", path, err)
}

// writeChecked runs write on w and returns the first error of any write to w, which a
// writer that does not check its writes (fmt.Fprintf) would lose, or write's own error.
func writeChecked(w io.Writer, write func(io.Writer) error) error {
	cw := &checkedWriter{w: w}
	err := write(cw)
	if cw.err != nil {
		return cw.err
	}
	return err
}

// checkedWriter passes writes on to w and keeps the first error (a short write is
// io.ErrShortWrite); once one has failed, every later write fails with it, unattempted.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}
