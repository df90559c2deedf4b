package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndlessInputs: every command that reads a trace or a plan refuses a device that
// never ends (/dev/zero, /dev/urandom) after its first bytes, with exit status 2 and an
// error naming the file; scenario refuses one (-w /dev/full reads zeros forever) at its
// documented 16 MiB limit.
func TestEndlessInputs(t *testing.T) {
	dir := t.TempDir()
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Skipf("no %s: %v", dev, err)
		}
		for _, args := range [][]string{
			{"replay", dev},
			{"check", dev},
			{"plan", dev, "--budget", "0"},
			{"check", example, dev},
			{"viz", dev, "-o", filepath.Join(dir, "x.svg")},
			{"viz", example, "--plan", dev, "-o", filepath.Join(dir, "x.svg")},
			{"perfetto", dev, "-o", filepath.Join(dir, "x.json")},
			{"import", dev, "-o", filepath.Join(dir, "x.json")},
		} {
			r := runClean(t, args...)
			require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
			line := errLine(t, r)
			require.Contains(t, line, "subarena: "+dev+": ", "%v", args)
			require.Contains(t, line, "binary data", "%v", args)
		}
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		r := runClean(t, "scenario", "-w", "/dev/full")
		require.Equal(t, 2, r.code, r.stderr)
		require.Contains(t, errLine(t, r), "/dev/full: scenario: invalid scenario: larger than the 16777216 B (16 MiB) a scenario file may have")
	}
	require.NoFileExists(t, filepath.Join(dir, "x.svg"))
}

// TestStdinInput: "-" reads the trace (or the plan) from standard input, refusing an
// endless one after its first bytes.
func TestStdinInput(t *testing.T) {
	data, err := os.ReadFile(example)
	require.NoError(t, err)
	rootCmd.SetIn(strings.NewReader(string(data)))
	defer rootCmd.SetIn(nil)
	r := runClean(t, "replay", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "trace         split-qkv")

	zeros, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zeros.Close()
	rootCmd.SetIn(zeros)
	r = runClean(t, "check", "-")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, errLine(t, r), "subarena: -: trace: not a subarena trace, MiniMalloc CSV or ggml trace: binary data")
}

// limitCases are inputs beyond a documented limit, each with the phrase naming it.
var limitCases = []struct{ name, ext, data, plan, says string }{
	{"granule 2^62", "json", `{"format": "subarena-trace/v1", "granule": 4611686018427387904, "engines": ["c"], "steps": [
		{"alloc": "a", "size": 8}, {"op": "w", "writes": ["a"]}, {"release": "a"}]}`, `"a": 0`,
		"limit: granule 4611686018427387904 is above the limit of 1073741824 B (2^30)"},
	{"4 TiB alloc", "json", `{"format": "subarena-trace/v1", "engines": ["c"], "steps": [
		{"alloc": "a", "size": 4398046511104}, {"op": "w", "writes": ["a"]}, {"release": "a"}]}`, `"a": 0`,
		`alloc "a" of 4398046511104 B is above the arena limit of 1099511627776 B (1 TiB)`},
	{"2 TiB live", "json", `{"format": "subarena-trace/v1", "engines": ["c"], "steps": [
		{"alloc": "a", "size": 1099511627776}, {"alloc": "b", "size": 1099511627776}, {"op": "w", "writes": ["a", "b"]},
		{"release": "a"}, {"release": "b"}]}`, `"a": 0, "b": 1099511627776`,
		`2199023255552 B allocated and not released is above the arena limit of 1099511627776 B (1 TiB)`},
	{"4 TiB ggml tensor", "json", `{"format": "ggml-alloc-trace/1", "config": "t", "alignment": 32, "tensors": [
		{"name": "in", "op": "NONE", "type": "f32", "ne": [8, 2, 1, 1], "nb": [4, 32, 64, 64], "nbytes": 64, "alloc_size": 64, "src": [], "view_src": null, "view_offs": 0, "is_input": true, "is_output": false, "buffer": "compute", "exec_index": -1},
		{"name": "h", "op": "MUL", "type": "f32", "ne": [1099511627776, 1, 1, 1], "nb": [4, 4398046511104, 4398046511104, 4398046511104], "nbytes": 4398046511104, "alloc_size": 4398046511104, "src": ["in", "in"], "view_src": null, "view_offs": 0, "is_input": false, "is_output": true, "buffer": "compute", "exec_index": 0}]}`,
		`"in": 0, "h": 64`, `alloc "h" of 4398046511104 B is above the arena limit of 137438953472 B (2^32 granules of 32 B)`},
	{"17 engines", "json", `{"format": "subarena-trace/v1", "engines": ["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8",
		"e9", "e10", "e11", "e12", "e13", "e14", "e15", "e16"], "steps": [
		{"alloc": "a", "size": 8}, {"op": "w", "engine": "e16", "writes": ["a"]}, {"release": "a"}]}`, `"a": 0`,
		"trace: limit: 17 engines, above the limit of 16"},
	{"MiniMalloc 5e9", "csv", "id,lower,upper,size\n0,0,1,3\n1,0,2,5000000000\n", `"0": 0, "1": 8`,
		`line 3: trace: beyond a documented limit: buffer "1" of 5000000000 B is above the arena limit of 4294967296 B (2^32 granules of 1 B)`},
	{"MiniMalloc 6 GiB live", "csv", "id,lower,upper,size\n0,0,2,3221225473\n1,1,3,3221225473\n", `"0": 0, "1": 3221225473`,
		`the buffers live at time 1, 6442450946 B together, is above the arena limit of 4294967296 B`},
}

// TestLimitsAgree: replay, check, plan and check FILE PLAN refuse the same inputs beyond
// the documented limits (granule, arena bytes per buffer and live at once, MiniMalloc's
// 4 GiB at granule 1), each with exit status 2 and an error naming the file and the
// limit; a plan larger than the arena limit is refused too.
func TestLimitsAgree(t *testing.T) {
	dir := t.TempDir()
	for _, c := range limitCases {
		path := writeTemp(t, dir, strings.ReplaceAll(c.name, " ", "-")+"."+c.ext, c.data)
		planPath := writeTemp(t, dir, strings.ReplaceAll(c.name, " ", "-")+".plan.json",
			`{"format": "subarena-plan/v1", "trace": "x", "size": 4398046511104, "offsets": {`+c.plan+`}}`)
		for _, args := range [][]string{
			{"replay", path},
			{"check", path},
			{"plan", path, "--budget", "0"},
			{"check", path, planPath},
			{"import", path, "-o", "-"},
		} {
			t.Run(c.name+"/"+strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
				r := runClean(t, args...)
				require.Equal(t, 2, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
				line := errLine(t, r)
				require.Contains(t, line, "subarena: "+path+": ")
				require.Contains(t, line, c.says)
			})
		}
	}
	planPath := writeTemp(t, dir, "huge.plan.json",
		`{"format": "subarena-plan/v1", "trace": "split-qkv", "size": 4398046511104, "offsets": {"qkv": 0, "tmp": 4398046502912}}`)
	r := runClean(t, "check", example, planPath)
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, errLine(t, r), "subarena: "+planPath+": trace: plan does not fit the trace: trace: beyond a documented limit: "+
		"the plan's size of 4398046511104 B is above the arena limit of 1099511627776 B (1 TiB)")
}
