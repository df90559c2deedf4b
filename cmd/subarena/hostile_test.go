package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
)

// runClean is runStreams with every flag of every command back at its default first
// (flag values live in package variables and outlast one Execute).
func runClean(t *testing.T, args ...string) result {
	t.Helper()
	resetFlags()
	var r result
	require.NotPanics(t, func() { r = runStreams(args...) }, "subarena %s", strings.Join(args, " "))
	return r
}

// writeTemp writes data to name in a fresh directory and returns its path.
func writeTemp(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	return path
}

// errLine checks that stderr ends with exactly one error line, with one prefix, and
// returns it.
func errLine(t *testing.T, r result) string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, "subarena: "), "stderr %q", r.stderr)
	require.NotContains(t, last, "subarena: subarena:")
	require.Equal(t, 1, strings.Count(r.stderr, "subarena: "), "stderr %q", r.stderr)
	return last
}

func hostileRandom() string {
	r := rand.New(rand.NewPCG(7, 8))
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	b[0] = 0xfe
	return string(b)
}

const hostileHeader = `{"format": "subarena-trace/v1", "engines": ["c", "d"], "steps": [`

// hostile are inputs a new user fed the CLI, with a phrase each error must contain.
var hostile = []struct{ name, data, says string }{
	{"empty", "", "not a subarena trace, MiniMalloc CSV or ggml trace: the input is empty"},
	{"white space", "  \n\t\n", "not a subarena trace, MiniMalloc CSV or ggml trace: the input is only white space"},
	{"array", "[1,2,3]", "not a subarena trace, MiniMalloc CSV or ggml trace: a JSON array"},
	{"random bytes", hostileRandom(), "not a subarena trace, MiniMalloc CSV or ggml trace: binary data"},
	{"empty object", "{}", `a JSON object without a "format" key`},
	{"ggml version 2", `{"format": "ggml-alloc-trace/2", "config": "x", "alignment": 32, "tensors": []}`,
		`unsupported format "ggml-alloc-trace/2"; this reader knows subarena-trace/v1 and ggml-alloc-trace/1`},
	{"truncated", hostileHeader + "\n" + `{"alloc": "a", "size": 6`, "line 2, column 25: syntax: unexpected end of JSON input"},
	{"huge size", hostileHeader + `{"alloc": "a", "size": 123456789012345678901234567890}]}`, "does not fit int64"},
	{"huge float", hostileHeader + `{"alloc": "a", "size": 1e999}]}`, "the number 1e999 where an integer is required"},
	{"huge cost", hostileHeader + `{"alloc": "a", "size": 8}, {"op": "w", "writes": ["a"], "cost": 9223372036854775807},
		{"op": "r", "reads": ["a"]}, {"release": "a"}]}`, `op "r" starts at time 9223372036854775807 and costs 1: it would end beyond int64 time`},
	{"huge ggml ne", `{"format": "ggml-alloc-trace/1", "config": "x", "alignment": 32, "tensors": [
		{"name": "t", "op": "ADD", "type": "f32", "ne": [1099511627776, 1099511627776, 1, 1], "nb": [4, 4398046511104, 0, 0],
		 "nbytes": 64, "alloc_size": 64, "src": [], "view_src": null, "view_offs": 0, "is_input": false, "is_output": true,
		 "buffer": "compute", "exec_index": 0}]}`, `ggml: tensor 0 "t": arithmetic overflow: ne [1099511627776 1099511627776 1 1]: the element count overflows int64`},
}

// TestHostileInputs: every command that reads a trace rejects each hostile input with
// exit status 2, nothing on standard output, and one error line naming the file and
// saying what is wrong; plan and replay agree on a trace whose ops overflow time.
func TestHostileInputs(t *testing.T) {
	dir := t.TempDir()
	for _, h := range hostile {
		path := writeTemp(t, dir, strings.ReplaceAll(h.name, " ", "-")+".json", h.data)
		for _, args := range [][]string{
			{"import", path, "-o", filepath.Join(dir, "out.json")},
			{"import", path, "-o", "-"},
			{"plan", path, "--budget", "0"},
			{"check", path},
			{"viz", path, "-o", filepath.Join(dir, "out.svg")},
			{"replay", path},
			{"perfetto", path, "-o", filepath.Join(dir, "out.perfetto.json")},
		} {
			t.Run(h.name+"/"+args[0], func(t *testing.T) {
				r := runClean(t, args...)
				require.Equal(t, 2, r.code, "stdout %q stderr %q", r.stdout, r.stderr)
				require.Empty(t, r.stdout)
				line := errLine(t, r)
				require.Contains(t, line, "subarena: "+path+": ")
				require.Contains(t, line, h.says)
				require.NotContains(t, line, "no header row")
				require.NotContains(t, line, "unknown key")
			})
		}
	}
}

// TestHostilePlans: a plan file that is no plan is refused by check and viz with what
// it looks like, and a malformed plan document with the line and column.
func TestHostilePlans(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, data, says string }{
		{"empty", "", "not a subarena-plan/v1 plan or MiniMalloc CSV solution: the input is empty"},
		{"array", "[1,2,3]", "not a subarena-plan/v1 plan or MiniMalloc CSV solution: a JSON array, not an object"},
		{"random bytes", hostileRandom(), "not a subarena-plan/v1 plan or MiniMalloc CSV solution: binary data"},
		{"truncated", "{\"format\": \"subarena-plan/v1\",\n \"trace\": \"x\", \"size\": 1, \"offsets\": {",
			"malformed document: line 2, column 39: unexpected end of JSON input"},
		{"a trace", "{\"format\": \"subarena-trace/v1\", \"engines\": [\"c\"], \"steps\": []}",
			`"subarena-trace/v1" is not "subarena-plan/v1"`},
		{"csv without offsets", "id,lower,upper,size\nqkv,0,1,24576\n", "a MiniMalloc CSV plan needs an offset column"},
	} {
		path := writeTemp(t, dir, strings.ReplaceAll(c.name, " ", "-")+".plan", c.data)
		for _, args := range [][]string{
			{"check", example, path},
			{"viz", example, "--plan", path, "-o", filepath.Join(dir, "x.svg")},
		} {
			r := runClean(t, args...)
			require.Equal(t, 2, r.code, "%s %v: %s", c.name, args, r.stderr)
			require.Empty(t, r.stdout)
			line := errLine(t, r)
			require.Contains(t, line, "subarena: "+path+": ")
			require.Contains(t, line, c.says)
		}
	}
	require.NoFileExists(t, filepath.Join(dir, "x.svg"))
}

// TestImportToStdout: with -o -, standard output is the document alone (it parses) and
// the summary, plain or JSON, goes to standard error; written to a file, the summary is
// standard output and the file is reported.
func TestImportToStdout(t *testing.T) {
	r := runClean(t, "import", example, "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	_, err := trace.Parse([]byte(r.stdout))
	require.NoError(t, err, "stdout is not the trace alone:\n%s", r.stdout)
	require.Contains(t, r.stderr, "split-qkv: 12 steps, 2 buffers, 4 ops -> - (trace)")

	r = runClean(t, "import", example, "-o", "-", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	_, err = trace.Parse([]byte(r.stdout))
	require.NoError(t, err)
	require.Contains(t, r.stderr, `"out": "-"`)

	r = runClean(t, "import", example, "-o", "-", "--format", "minimalloc")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "id,lower,upper,size\n"), r.stdout)
	require.NotContains(t, r.stdout, "split-qkv:")

	out := filepath.Join(t.TempDir(), "x.json")
	r = runClean(t, "import", example, "-o", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "split-qkv: 12 steps, 2 buffers, 4 ops -> "+out+" (trace)\n", r.stdout)
	require.Equal(t, "wrote "+out+"\n", r.stderr)
}

// TestImportOffsetsNeedCSV: --plan and --policy give offsets, which a subarena-trace/v1
// document cannot carry: the combination is refused, nothing written; with a CSV they
// are honoured.
func TestImportOffsetsNeedCSV(t *testing.T) {
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	require.Equal(t, 0, runClean(t, "replay", example, "-o", planPath).code)
	for _, args := range [][]string{
		{"import", example, "--plan", planPath, "-o", filepath.Join(dir, "x.json")},
		{"import", example, "--policy", "whole-fenced", "-o", filepath.Join(dir, "x.json")},
		{"import", example, "--plan", planPath, "--format", "trace", "-o", filepath.Join(dir, "x.csv")},
	} {
		r := runClean(t, args...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, errLine(t, r), "--plan and --policy give offsets, which only a MiniMalloc CSV carries")
		require.NoFileExists(t, filepath.Join(dir, "x.json"))
		require.NoFileExists(t, filepath.Join(dir, "x.csv"))
	}
	r := runClean(t, "import", example, "--plan", planPath, "--policy", "ir-order", "-o", filepath.Join(dir, "x.csv"))
	require.Equal(t, 2, r.code)
	require.Contains(t, errLine(t, r), "--plan and --policy both give offsets")

	r = runClean(t, "import", example, "--plan", planPath, "-o", "-", "--format", "minimalloc")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "id,lower,upper,size,offset\n"), r.stdout)
}

// TestVizChecksThePlan: viz --plan draws an unsafe plan but warns on standard error,
// listing the violations, and exits 1 as check does; a safe plan is drawn quietly. The
// picture is titled by the plan, not by a policy it was not made under.
func TestVizChecksThePlan(t *testing.T) {
	dir := t.TempDir()
	unsafe, safe := filepath.Join(dir, "unsafe.json"), filepath.Join(dir, "safe.json")
	svg := filepath.Join(dir, "v.svg")
	require.Equal(t, 0, runClean(t, "replay", example, "--policy", "ir-order", "-o", unsafe).code)
	require.Equal(t, 0, runClean(t, "replay", example, "-o", safe).code)

	check := runClean(t, "check", example, unsafe)
	require.Equal(t, 1, check.code)

	r := runClean(t, "viz", example, "--plan", unsafe, "-o", svg)
	require.Equal(t, check.code, r.code, r.stderr)
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "wrote "+svg+"\n")
	require.Contains(t, r.stderr, "warning: plan "+unsafe+" is UNSAFE for "+example+": 1 violations (drawn anyway):")
	require.Contains(t, r.stderr, "offload_v -> use_tmp")
	require.Contains(t, errLine(t, r), "plan is unsafe: 1 violations")
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	benchtest.SVG(t, data)
	require.Contains(t, string(data), "under plan unsafe.json, policy ir-order, size ")
	require.NotContains(t, string(data), "whole-after-users")

	r = runClean(t, "viz", example, "--plan", safe, "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "under plan safe.json, policy subrange-fenced, size ")
	require.NotContains(t, r.stdout, "whole-after-users")

	// A plan that does not fit the trace is an error, and nothing is drawn.
	bad := writeTemp(t, dir, "bad.json", `{"format": "subarena-plan/v1", "trace": "x", "size": 10, "offsets": {"qkv": 0}}`)
	r = runClean(t, "viz", example, "--plan", bad, "-o", filepath.Join(dir, "bad.svg"))
	require.Equal(t, 2, r.code)
	require.Contains(t, errLine(t, r), "subarena: "+bad+": trace: plan does not fit the trace")
	require.NoFileExists(t, filepath.Join(dir, "bad.svg"))
}

// TestWroteLines: every file a command writes is reported on standard error, and a
// document on standard output leaves the report to standard error.
func TestWroteLines(t *testing.T) {
	dir := t.TempDir()
	svg, pf, planPath := filepath.Join(dir, "t.svg"), filepath.Join(dir, "p.json"), filepath.Join(dir, "plan.json")
	r := runClean(t, "viz", example, "-o", svg)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "wrote "+svg+"\n", r.stderr)
	require.Empty(t, r.stdout)

	page := filepath.Join(dir, "t.html")
	r = runClean(t, "viz", example, "--html", "-o", page)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "wrote "+page+"\n", r.stderr)
	require.Empty(t, r.stdout)

	r = runClean(t, "viz", example, "--html", "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, "<!DOCTYPE html>"), "stdout is not the page alone")

	r = runClean(t, "perfetto", example, "-o", pf)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "wrote "+pf+"\n", r.stderr)

	r = runClean(t, "bench", "--quick", "-o", dir, "--workload", "llama", "--policy", "subrange-fenced", "--fit", "lean",
		"--no-first-fit", "--timeline", "llama")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "wrote "+filepath.Join(dir, "bench.svg")+"\nwrote "+filepath.Join(dir, "timeline.svg")+
		"\nwrote "+filepath.Join(dir, "bench.html")+"\n", r.stderr)
	require.NotContains(t, r.stdout, "wrote")

	r = runClean(t, "replay", example, "-o", planPath, "--perfetto", pf)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "wrote "+planPath+"\nwrote "+pf+"\n", r.stderr)
	require.Contains(t, r.stdout, "hwm ")

	r = runClean(t, "replay", example, "-o", "-")
	require.Equal(t, 0, r.code, r.stderr)
	_, err := trace.ParsePlan([]byte(r.stdout))
	require.NoError(t, err, "stdout is not the plan alone:\n%s", r.stdout)
	require.Contains(t, r.stderr, "hwm ")

	r = runClean(t, "plan", example, "--budget", "0", "--trace-out", "-")
	require.Equal(t, 0, r.code, r.stderr)
	_, err = trace.Parse([]byte(r.stdout))
	require.NoError(t, err, "stdout is not the trace alone:\n%s", r.stdout)
	require.Contains(t, r.stderr, "lower_bound")

	for _, args := range [][]string{
		{"replay", example, "-o", "-", "--perfetto", "-"},
		{"plan", example, "-o", "-", "--trace-out", "-"},
		{"plan", example, "-o", "-", "--json"},
	} {
		r := runClean(t, args...)
		require.Equal(t, 2, r.code, "%v", args)
		require.Empty(t, r.stdout)
		errLine(t, r)
	}
}

// TestPlanAndReplayAgree: a trace whose op would end beyond int64 time is refused by
// plan as it is by replay, with the same error.
func TestPlanAndReplayAgree(t *testing.T) {
	var h = hostile[len(hostile)-2]
	require.Equal(t, "huge cost", h.name)
	path := writeTemp(t, t.TempDir(), "cost.json", h.data)
	plan, replay := runClean(t, "plan", path, "--budget", "0"), runClean(t, "replay", path)
	require.Equal(t, 2, plan.code)
	require.Equal(t, plan.code, replay.code)
	require.Equal(t, errLine(t, plan), errLine(t, replay))
}

// TestOneErrorPrefix: an error from the subarena package, which starts with its own
// "subarena: ", is printed with one prefix.
func TestOneErrorPrefix(t *testing.T) {
	r := runClean(t, "replay", example, "--policy", "nope")
	require.Equal(t, 2, r.code)
	require.Equal(t, `subarena: invalid config: unknown policy "nope"`, strings.SplitN(errLine(t, r), " (", 2)[0])
	require.Equal(t, "subarena: x", errorLine(errors.New("subarena: subarena: x")))
	require.Equal(t, "subarena: trace: y z", errorLine(fmt.Errorf("trace: y\nz")))
}
