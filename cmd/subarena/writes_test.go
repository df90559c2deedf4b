package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain runs the command itself, not the tests, when SUBARENA_TEST_MAIN is set: a
// test can then run it as a process, under limits of its own (ulimit -f).
func TestMain(m *testing.M) {
	if os.Getenv("SUBARENA_TEST_MAIN") != "" {
		main()
	}
	os.Exit(m.Run())
}

// TestWriteToFullDevice: every command writing a document to a full device, as a file
// (-o /dev/full) or as its standard output, fails with exit status 2 and an error naming
// what it was writing; none reports success.
func TestWriteToFullDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	require.NoError(t, err)
	defer full.Close()
	for _, args := range [][]string{
		{"replay", example},
		{"replay", example, "--json"},
		{"check", example},
		{"check", example, "--json"},
		{"plan", example, "--budget", "0"},
		{"plan", example, "--budget", "0", "--json"},
		{"import", example, "-o", "-"},
		{"viz", example, "-o", "-"},
	} {
		resetFlags()
		var stderr bytes.Buffer
		code := execute(args, full, &stderr)
		require.Equal(t, 2, code, "%v: %s", args, stderr.String())
		require.Contains(t, stderr.String(), "no space left on device", "%v", args)
	}
	for _, args := range [][]string{
		{"viz", example, "-o", "/dev/full"},
		{"viz", example, "--html", "-o", "/dev/full"},
		{"perfetto", example, "-o", "/dev/full"},
		{"import", example, "-o", "/dev/full"},
		{"replay", example, "-o", "/dev/full"},
		{"replay", example, "--perfetto", "/dev/full"},
		{"plan", example, "--budget", "0", "-o", "/dev/full"},
	} {
		r := runClean(t, args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, errLine(t, r), "subarena: writing /dev/full: no space left on device", "%v", args)
		require.NotContains(t, r.stderr, "wrote /dev/full", "%v", args)
	}
}

// TestWriteOverFileSizeLimit: a write failing half way (a file size limit, as ulimit -f
// sets) leaves no truncated file: the old file stays whole, or there is none; the
// command exits 2 naming the file.
func TestWriteOverFileSizeLimit(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	old := []byte("the old file\n")
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"viz", example, "-o"}, "x.svg"},
		{[]string{"viz", example, "--html", "-o"}, "x.html"},
		{[]string{"perfetto", example, "-o"}, "x.json"},
		{[]string{"import", example, "-o"}, "x.trace.json"},
		{[]string{"replay", example, "--perfetto"}, "r.json"},
	} {
		for _, exists := range []bool{false, true} {
			path := filepath.Join(dir, c.out)
			os.Remove(path)
			if exists {
				require.NoError(t, os.WriteFile(path, old, 0o600))
			}
			args := append(c.args[:len(c.args):len(c.args)], path)
			// 1 block of 512 bytes: every output here is larger. SIGXFSZ is ignored,
			// so the write fails with EFBIG instead of killing the process.
			cmd := exec.Command(sh, append([]string{"-c", `trap "" XFSZ; ulimit -f 1; exec "$@"`, "sh", os.Args[0]}, args...)...)
			cmd.Env = append(os.Environ(), "SUBARENA_TEST_MAIN=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%v: %v %s", args, err, stderr.String())
			require.Equal(t, 2, ee.ExitCode(), "%v: %s", args, stderr.String())
			if exists {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Equal(t, old, data, "%v: the old file was overwritten", args)
				st, err := os.Stat(path)
				require.NoError(t, err)
				require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			} else {
				require.NoFileExists(t, path, "%v", args)
			}
			require.Contains(t, stderr.String(), "subarena: writing "+path+": file too large", "%v", args)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary file %s left behind", e.Name())
			}
		}
	}
}

// TestReplaceKeepsMode: a file written again keeps its mode; a new one is 0644.
func TestReplaceKeepsMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.svg")
	require.Equal(t, 0, runClean(t, "viz", example, "-o", path).code)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	require.NoError(t, os.Chmod(path, 0o600))
	require.Equal(t, 0, runClean(t, "viz", example, "-o", path).code)
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// TestReplaceThroughLink: writing to a symbolic link replaces the file it points to and
// keeps the link; a missing directory is an error naming the path asked for.
func TestReplaceThroughLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.svg")
	require.NoError(t, os.WriteFile(real, []byte("old"), 0o644))
	link := filepath.Join(dir, "link.svg")
	require.NoError(t, os.Symlink("real.svg", link))
	require.Equal(t, 0, runClean(t, "viz", example, "-o", link).code)
	st, err := os.Lstat(link)
	require.NoError(t, err)
	require.True(t, st.Mode()&os.ModeSymlink != 0, "the link was replaced")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	require.Contains(t, string(data), "<svg")

	missing := filepath.Join(dir, "no", "such", "x.svg")
	r := runClean(t, "viz", example, "-o", missing)
	require.Equal(t, 2, r.code)
	require.Equal(t, "subarena: writing "+missing+": no such file or directory", errLine(t, r))
}
