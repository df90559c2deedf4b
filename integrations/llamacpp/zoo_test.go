package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subarena/subarena/integrations/llamacpp/gguf"
)

var (
	rigOnce sync.Once
	rig     *Rig
	rigErr  error
	zooDir  string
	zooMu   sync.Mutex
	zooPath = map[string]string{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if zooDir != "" {
		os.RemoveAll(zooDir)
	}
	os.Exit(code)
}

// setup returns the build, skipping the test when there is none, except
// under CI=true, where .ci/run must have built it.
func setup(t *testing.T) *Rig {
	t.Helper()
	rigOnce.Do(func() { rig, rigErr = Open(DefaultOut(".")) })
	if rigErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", rigErr)
		}
		t.Skipf("%v", rigErr)
	}
	return rig
}

// model writes m once per test binary and returns its path.
func model(t *testing.T, r *Rig, m gguf.Model) string {
	t.Helper()
	zooMu.Lock()
	defer zooMu.Unlock()
	if p, ok := zooPath[m.Name]; ok {
		return p
	}
	if zooDir == "" {
		d, err := os.MkdirTemp("", "subarena-zoo-")
		if err != nil {
			t.Fatal(err)
		}
		zooDir = d
	}
	p := filepath.Join(zooDir, m.Name+".gguf")
	if err := m.Write(p, r.Models, 1); err != nil {
		t.Fatal(err)
	}
	zooPath[m.Name] = p
	return p
}

// configs covers every value of every dimension the issue names (flash
// attention, ubatch, graph reuse, threads, odd prompt chunks, n_outputs_max)
// in five runs; SUBARENA_LLAMACPP_FULL=1 crosses them all.
func configs() []Config {
	if os.Getenv("SUBARENA_LLAMACPP_FULL") == "1" {
		var cs []Config
		for _, fa := range []bool{false, true} {
			for _, ub := range []int{512, 32} {
				for _, noReuse := range []bool{false, true} {
					for _, th := range []int{1, 2} {
						for _, out := range []int{0, 1} {
							c := Config{FlashAttn: fa, Ubatch: ub, NoReuse: noReuse, Threads: th, OutputsMax: out}
							if ub == 32 {
								c.Chunks = "7,13,50"
							}
							cs = append(cs, c)
						}
					}
				}
			}
		}
		return cs
	}
	return []Config{
		{Threads: 2},
		{FlashAttn: true, Threads: 1},
		{Ubatch: 32, Chunks: "7,13,50", NoReuse: true, Threads: 1},
		{FlashAttn: true, Ubatch: 32, Chunks: "7,13,50", Threads: 2, OutputsMax: 1},
		{FlashAttn: true, NoReuse: true, Threads: 2, OutputsMax: 1},
	}
}

// firstDiff returns the first step whose logits differ, or -1.
func firstDiff(a, b []byte, vocab int) int {
	step := 4 * vocab
	for i := 0; i < min(len(a), len(b)); i += step {
		if !bytes.Equal(a[i:min(i+step, len(a))], b[i:min(i+step, len(b))]) {
			return i / step
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b)) / step
	}
	return -1
}

// TestZoo runs every model of the zoo in every configuration with and
// without the library: logits byte-identical at every step, the same
// tokens, a compute buffer no larger than gallocr's and at the planner's
// proven lower bound, and the library's own allocator serving every call,
// every plan (the first plan and the planner's) checked by the safety
// checker (SUBARENA_GGML_CHECK=1) before it is used.
func TestZoo(t *testing.T) {
	r := setup(t)
	for _, m := range gguf.Zoo {
		path := model(t, r, m)
		for _, c := range configs() {
			t.Run(m.Name+"/"+c.String(), func(t *testing.T) {
				dir := t.TempDir()
				base, err := r.Drive(dir, path, c, false, nil)
				if err != nil {
					t.Fatalf("without the library: %v", err)
				}
				// the search below a greedy plan above its bound runs to the
				// bound (where it stops), however slow the machine; every
				// plan, the first plan included, passes the safety checker
				// (else the allocator falls back: checkServed)
				got, err := r.Drive(dir, path, c, true, []string{"SUBARENA_GGML_BUDGET=60s", "SUBARENA_GGML_CHECK=1"})
				if err != nil {
					t.Fatalf("with the library: %v", err)
				}
				// one step per prompt chunk and per generated token
				wantSteps := strings.Count(base.Stdout, "prefill ") + or(c.Gen, 32)
				if len(base.Logits) == 0 || len(base.Logits)%wantSteps != 0 {
					t.Fatalf("gallocr's run wrote %d bytes of logits, not %d steps", len(base.Logits), wantSteps)
				}
				vocab := len(base.Logits) / 4 / wantSteps
				if !bytes.Equal(base.Logits, got.Logits) {
					t.Errorf("logits differ first at step %d (of %d bytes and %d bytes)", firstDiff(base.Logits, got.Logits, vocab), len(base.Logits), len(got.Logits))
				}
				if nan := countNaN(base.Logits); nan > 0 {
					t.Errorf("gallocr's logits hold %d NaNs: the model is degenerate", nan)
				}
				if base.Stdout != got.Stdout {
					t.Errorf("tokens differ:\n%s\nvs\n%s", base.Stdout, got.Stdout)
				}
				if base.Reserved <= 0 || got.Reserved <= 0 || got.Reserved > base.Reserved {
					t.Errorf("reserved compute buffer %.2f MiB, gallocr's %.2f MiB", got.Reserved, base.Reserved)
				}
				if base.Final <= 0 || got.Final <= 0 || got.Final > base.Final {
					t.Errorf("final compute buffer %.4f MiB, gallocr's %.4f MiB", got.Final, base.Final)
				}
				checkServed(t, got)
				t.Logf("compute buffer: gallocr %.2f MiB, subarena %.2f MiB (final %.4f vs %.4f)", base.Reserved, got.Reserved, base.Final, got.Final)
			})
		}
	}
}

func countNaN(b []byte) int {
	n := 0
	for i := 0; i+4 <= len(b); i += 4 {
		if math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))) {
			n++
		}
	}
	return n
}

// checkServed checks the stats of a run with the library: one allocator,
// served by subarena throughout, no larger than gallocr's for the same
// graphs, every graph after llama.cpp's reserve placed with a reserved
// plan (none of the zoo's exceeds the reserved one), a buffer at the
// planner's proven lower bound.
func checkServed(t *testing.T, run *Run) {
	t.Helper()
	if run.Stats == nil {
		t.Fatalf("no stats file written")
	}
	if len(run.Stats.Allocators) != 1 {
		t.Fatalf("%d allocators, want 1 (llama.cpp's scheduler on the CPU)", len(run.Stats.Allocators))
	}
	a := run.Stats.Allocators[0]
	if a.Fallback != "" || a.Fallbacks != 0 {
		t.Errorf("fell back to gallocr (%q, %d calls)", a.Fallback, a.Fallbacks)
	}
	if a.Calls["reserve_n"] == 0 || a.Calls["alloc_graph"] == 0 || a.Hits == 0 {
		t.Errorf("planned nothing: %+v", a)
	}
	if len(a.Sizes) != 1 || len(a.GallocrSizes) != 1 || a.Sizes[0] <= 0 || a.Sizes[0] > a.GallocrSizes[0] {
		t.Errorf("buffer sizes %v, gallocr's for the same graphs %v", a.Sizes, a.GallocrSizes)
	}
	if a.MissesAfterReserve != 0 {
		t.Errorf("%d graphs planned after llama.cpp's reserve (hits %d, misses %d)", a.MissesAfterReserve, a.Hits, a.Misses)
	}
	if a.Bound <= 0 || a.Bound > a.Sizes[0] {
		t.Errorf("lower bound %d, buffer %v", a.Bound, a.Sizes)
	}
	// every plan starts from its first plan, timed within the plan's call
	if a.FirstPlanNs <= 0 || a.FirstPlanNs > a.PlanNs {
		t.Errorf("first plan %d ns, plans %d ns in all", a.FirstPlanNs, a.PlanNs)
	}
	if len(a.Sizes) == 1 && a.Sizes[0] != a.Bound {
		t.Errorf("buffer %d bytes, above the proven lower bound %d", a.Sizes[0], a.Bound)
	}
	if strings.Contains(run.Stderr, "subarena-ggml:") {
		t.Errorf("the library said something on stderr:\n%s", grep(run.Stderr, "subarena-ggml:"))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestOff checks that SUBARENA_GGML=off leaves llama.cpp as it is: the
// same logits and exactly gallocr's compute buffer, and no stats.
func TestOff(t *testing.T) {
	r := setup(t)
	path := model(t, r, gguf.Zoo[0])
	c := Config{FlashAttn: true, Threads: 2, OutputsMax: 1}
	dir := t.TempDir()
	base, err := r.Drive(dir, path, c, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"off", "gallocr"} {
		got, err := r.Drive(dir, path, c, true, []string{"SUBARENA_GGML=" + mode})
		if err != nil {
			t.Fatalf("SUBARENA_GGML=%s: %v", mode, err)
		}
		if !bytes.Equal(base.Logits, got.Logits) || base.Stdout != got.Stdout {
			t.Errorf("SUBARENA_GGML=%s: logits or tokens differ from gallocr's", mode)
		}
		if got.Reserved != base.Reserved || got.Final != base.Final {
			t.Errorf("SUBARENA_GGML=%s: compute buffer %.4f MiB, gallocr's %.4f MiB", mode, got.Final, base.Final)
		}
		switch {
		case mode == "off" && got.Stats != nil:
			t.Errorf("SUBARENA_GGML=off wrote stats")
		case mode == "gallocr" && (got.Stats == nil || len(got.Stats.Allocators) != 1 ||
			got.Stats.Allocators[0].Sizes[0] != got.Stats.Allocators[0].GallocrSizes[0]):
			t.Errorf("SUBARENA_GGML=gallocr: stats %+v, want one allocator of gallocr's size", got.Stats)
		}
	}
}

// TestFallback makes the library give an allocator up, at its first
// reserve and at its first alloc_graph: ggml's gallocr takes over (the
// tensors placed before stay valid), the logits stay gallocr's, and the
// reason is said once on stderr.
func TestFallback(t *testing.T) {
	r := setup(t)
	path := model(t, r, gguf.Zoo[1])
	c := Config{Ubatch: 32, Chunks: "7,13,50", Threads: 2}
	dir := t.TempDir()
	base, err := r.Drive(dir, path, c, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"reserve_n", "alloc_graph"} {
		got, err := r.Drive(dir, path, c, true, []string{"SUBARENA_GGML_TEST_FALLBACK=" + at})
		if err != nil {
			t.Fatalf("falling back at %s: %v", at, err)
		}
		if !bytes.Equal(base.Logits, got.Logits) || base.Stdout != got.Stdout {
			t.Errorf("falling back at %s: logits or tokens differ from gallocr's", at)
		}
		if n := strings.Count(got.Stderr, "ggml's gallocr serves this allocator"); n != 1 {
			t.Errorf("falling back at %s: said %d times on stderr, want once", at, n)
		}
		if got.Stats == nil || len(got.Stats.Allocators) != 1 || got.Stats.Allocators[0].Fallbacks == 0 {
			t.Errorf("falling back at %s: stats %+v count no fallback", at, got.Stats)
		}
	}
}

// TestGallocrCheck runs gallocr-check (reserve_n_size against reserve_n,
// a foreign handle, one buffer type under two buffer ids, two buffer types,
// an unread leaf) with the library and without it; with it, every
// allocator the check makes is served by subarena.
func TestGallocrCheck(t *testing.T) {
	r := setup(t)
	for _, preload := range []bool{false, true} {
		stats := filepath.Join(t.TempDir(), "stats.json")
		cmd := exec.Command(filepath.Join(r.Out, "gallocr-check"), r.Bins)
		if preload {
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+r.Library(), "SUBARENA_GGML_STATS="+stats)
		}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "FAIL") {
			t.Errorf("preload %v: %v\n%s", preload, err, out)
		}
		if n := strings.Count(string(out), "\nok "); n < 19 {
			t.Errorf("preload %v: %d checks passed, want 20:\n%s", preload, n+1, out)
		}
		if !preload {
			continue
		}
		var st Stats
		if b, err := os.ReadFile(stats); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		twoTypes := 0
		for _, a := range st.Allocators {
			if a.Fallback != "" || a.Fallbacks != 0 {
				t.Errorf("allocator %d fell back: %q", a.ID, a.Fallback)
			}
			if a.BufferTypes == 2 && a.Sizes[0] > 0 && a.Sizes[1] > 0 {
				twoTypes++
			}
		}
		// (the foreign handles are ggml's own: not in the stats)
		if len(st.Allocators) != 4 || twoTypes != 2 {
			t.Errorf("%d allocators, %d with two buffers, want 4 and 2: %+v", len(st.Allocators), twoTypes, st.Allocators)
		}
	}
}

// TestSIGINT interrupts a host that installs its SIGINT handler the way
// llama-server does (sa_flags 0) while it decodes: with the library, as
// without it, the handler runs and the host exits with its own status.
func TestSIGINT(t *testing.T) {
	r := setup(t)
	path := model(t, r, gguf.Zoo[0])
	for _, preload := range []bool{false, true} {
		cmd := exec.Command(filepath.Join(r.Out, "llama-drive"), "-m", path, "-backends", r.Bins, "-ctx", "256",
			"-prompt", "16", "-threads", "2", "-sigint")
		cmd.Env = os.Environ()
		if preload {
			cmd.Env = append(cmd.Env, "LD_PRELOAD="+r.Library())
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		ready := ""
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready = sc.Text()
				break
			}
		}
		if ready == "" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("preload %v: the host never got ready:\n%s", preload, tail(stderr.String(), 2000))
		}
		// The library adds SA_ONSTACK to the host's handler; without it
		// the handler is as the host set it.
		if want := fmt.Sprintf("ready onstack=%d", b2i(preload)); ready != want {
			t.Errorf("preload %v: the host said %q, want %q", preload, ready, want)
		}
		time.Sleep(200 * time.Millisecond) // decoding, on threads of ggml's and Go's
		// SIGINT to every thread of the host, Go's included, then to the process.
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = syscall.Tgkill(cmd.Process.Pid, tid, syscall.SIGINT)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		var rest strings.Builder
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 || !strings.Contains(rest.String(), "interrupted") {
			t.Errorf("preload %v: exit %v, output %q, want status 130 after \"interrupted\":\n%s", preload, err, rest.String(), tail(stderr.String(), 2000))
		}
	}
}

// TestLocalHost loads ggml with dlopen(RTLD_LOCAL), as a plugin host does:
// the library cannot reach ggml from the global scope, says so once, and
// ggml's gallocr (found in the caller's library) serves the allocator.
func TestLocalHost(t *testing.T) {
	r := setup(t)
	cmd := exec.Command(filepath.Join(r.Out, "local-host"), filepath.Join(r.Bins, "libggml-base.so"))
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+r.Library())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.HasPrefix(stdout.String(), "ok ") {
		t.Fatalf("local-host: %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
	}
	if n := strings.Count(stderr.String(), "ggml's gallocr serves every allocator"); n != 1 {
		t.Errorf("said %d times on stderr, want once:\n%s", n, stderr.String())
	}
}

// TestNoPlanAfterReserve feeds prompts of 1 to 600 tokens, whole and in odd
// chunks, with llama.cpp's graph reuse on and off: after llama.cpp's
// reserve at context creation, no graph is planned (the stats file's
// misses_after_reserve), since every one fits the reserved worst case.
func TestNoPlanAfterReserve(t *testing.T) {
	r := setup(t)
	for _, m := range []gguf.Model{gguf.Zoo[0], gguf.Zoo[2]} {
		path := model(t, r, m)
		for _, c := range []Config{
			{Prompt: 1, Gen: 4, Threads: 2},
			{Prompt: 37, Gen: 4, Chunks: "1,2,3", Threads: 2, NoReuse: true},
			{Prompt: 600, Gen: 4, Ctx: 1024, Chunks: "7,13,50,333", Threads: 2},
			{Prompt: 600, Gen: 4, Ctx: 1024, Ubatch: 64, FlashAttn: true, Threads: 2, NoReuse: true},
		} {
			t.Run(m.Name+"/"+c.String()+fmt.Sprintf("-p%d", c.Prompt), func(t *testing.T) {
				got, err := r.Drive(t.TempDir(), path, c, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got.Stats == nil || len(got.Stats.Allocators) != 1 {
					t.Fatalf("stats %+v", got.Stats)
				}
				a := got.Stats.Allocators[0]
				if a.MissesAfterReserve != 0 || a.Hits == 0 || a.Fallbacks != 0 {
					t.Errorf("hits %d, misses %d, %d after the reserve, fallbacks %d", a.Hits, a.Misses, a.MissesAfterReserve, a.Fallbacks)
				}
			})
		}
	}
}
