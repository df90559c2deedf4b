package llamacpp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrNoRelease reports that build.sh's output is not where Open looks.
var ErrNoRelease = errors.New("llamacpp: no build of libsubarena-ggml.so found (run build.sh)")

// Rig is a build of build.sh: the library, the drivers and the release
// they were built against.
type Rig struct {
	// Out is build.sh's OUTDIR.
	Out string
	// Bins is the directory of the release's libraries (and its CPU
	// backends); Models that of its vocabularies (ggml-vocab-*.gguf).
	Bins, Models string
}

// DefaultOut returns where Open looks: $SUBARENA_LLAMACPP_OUT, else
// dir/.cache/out.
func DefaultOut(dir string) string {
	if o := os.Getenv("SUBARENA_LLAMACPP_OUT"); o != "" {
		return o
	}
	return filepath.Join(dir, ".cache", "out")
}

// Open returns the build in out, or an error wrapping ErrNoRelease when a
// file of it is missing.
func Open(out string) (*Rig, error) {
	b, err := os.ReadFile(filepath.Join(out, "release.env"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoRelease, err)
	}
	r := &Rig{Out: out}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "SUBARENA_LLAMACPP_BINS":
			r.Bins = v
		case "SUBARENA_LLAMACPP_MODELS":
			r.Models = v
		}
	}
	for _, p := range []string{r.Library(), filepath.Join(out, "llama-drive"), filepath.Join(out, "gallocr-check"), filepath.Join(out, "kernel-check"),
		filepath.Join(out, "local-host"),
		filepath.Join(r.Bins, "libggml-base.so"), r.Models} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoRelease, err)
		}
	}
	return r, nil
}

// Library returns the path of libsubarena-ggml.so.
func (r *Rig) Library() string { return filepath.Join(r.Out, "libsubarena-ggml.so") }

// Config is one way of running a model through llama-drive.
type Config struct {
	FlashAttn  bool
	Ubatch     int    // n_ubatch (and the prompt's largest chunk); 0 means 512
	Chunks     string // prompt chunk sizes, "7,13,50": the rest in one chunk
	NoReuse    bool   // LLAMA_GRAPH_REUSE_DISABLE=1
	Threads    int    // 0 means 1
	OutputsMax int    // n_outputs_max; 0 means llama.cpp's default (the batch)
	Prompt     int    // prompt tokens; 0 means 100
	Gen        int    // generated tokens; 0 means 32
	Ctx        int    // n_ctx; 0 means 512
}

// String names c in test names and tables.
func (c Config) String() string {
	s := fmt.Sprintf("fa%d-ub%d-t%d", b2i(c.FlashAttn), or(c.Ubatch, 512), or(c.Threads, 1))
	if c.Chunks != "" {
		s += "-chunks" + strings.ReplaceAll(c.Chunks, ",", ".")
	}
	if c.NoReuse {
		s += "-noreuse"
	}
	if c.OutputsMax > 0 {
		s += fmt.Sprintf("-out%d", c.OutputsMax)
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func or(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// Run is what one llama-drive run produced.
type Run struct {
	Logits []byte // every step's logits of the last token, n_vocab float32 each
	Stdout string // the steps and tokens
	Stderr string
	// Reserved is llama.cpp's "CPU compute buffer size" after its reserve
	// at context creation, Final the size it reports when the context is
	// freed (after any growth), both in MiB.
	Reserved, Final float64
	// Stats is the SUBARENA_GGML_STATS file, when one was asked for.
	Stats *Stats
	// ExitCode is the driver's exit status.
	ExitCode int
}

var (
	reservedRe = regexp.MustCompile(`sched_reserve: +CPU compute buffer size = +([0-9.]+) MiB`)
	finalRe    = regexp.MustCompile(`CPU compute buffer size is +([0-9.]+) MiB`)
)

// Drive runs model through llama-drive with c; preload loads the library,
// env is added to the environment (SUBARENA_GGML_STATS is set to a file in
// dir when preload is set). Extra flags go to the driver as they are.
func (r *Rig) Drive(dir, model string, c Config, preload bool, env []string, extra ...string) (*Run, error) {
	logits := filepath.Join(dir, "logits.bin")
	stats := filepath.Join(dir, "stats.json")
	os.Remove(logits)
	os.Remove(stats)
	args := []string{"-m", model, "-backends", r.Bins, "-ctx", strconv.Itoa(or(c.Ctx, 512)),
		"-ubatch", strconv.Itoa(or(c.Ubatch, 512)), "-fa", strconv.Itoa(b2i(c.FlashAttn)),
		"-threads", strconv.Itoa(or(c.Threads, 1)), "-prompt", strconv.Itoa(or(c.Prompt, 100)),
		"-gen", strconv.Itoa(or(c.Gen, 32)), "-outputs-max", strconv.Itoa(c.OutputsMax)}
	if c.Chunks != "" {
		args = append(args, "-chunks", c.Chunks)
	}
	if !slices.Contains(extra, "-sigint") {
		args = append(args, "-o", logits)
	}
	args = append(args, extra...)
	cmd := exec.Command(filepath.Join(r.Out, "llama-drive"), args...)
	cmd.Env = append(os.Environ(), env...)
	if c.NoReuse {
		cmd.Env = append(cmd.Env, "LLAMA_GRAPH_REUSE_DISABLE=1")
	}
	if preload {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+r.Library(), "SUBARENA_GGML_STATS="+stats)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := &Run{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.ExitCode = exit.ExitCode()
	} else if err != nil {
		return nil, err
	}
	if run.ExitCode != 0 {
		return run, fmt.Errorf("llama-drive exited with %d: %s", run.ExitCode, tail(run.Stderr, 2000))
	}
	if run.Logits, err = os.ReadFile(logits); err != nil {
		return run, err
	}
	run.Reserved = lastMiB(reservedRe, run.Stderr)
	run.Final = lastMiB(finalRe, run.Stderr)
	if b, err := os.ReadFile(stats); err == nil {
		run.Stats = &Stats{}
		if err := json.Unmarshal(b, run.Stats); err != nil {
			return run, fmt.Errorf("%s: %w", stats, err)
		}
	}
	return run, nil
}

func lastMiB(re *regexp.Regexp, s string) float64 {
	m := re.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	return v
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
