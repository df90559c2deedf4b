package llamacpp

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/kernels"
)

// TestInplaceKernels runs kernel-check for every entry of the table of
// kernels verified in place (integrations/ggml/kernels), every type of it,
// on 1 and 3 threads with the CPU backend ggml picks for this machine, and
// on 3 threads with each of the release's CPU backends this machine can
// run: the output over each input the entry lets it overlay computes the
// same bytes as the output in its own memory. An entry kernel-check has no
// check for fails.
func TestInplaceKernels(t *testing.T) {
	r := setup(t)
	if len(kernels.InPlace) == 0 {
		t.Fatal("the table is empty")
	}
	variants, err := filepath.Glob(filepath.Join(r.Bins, "libggml-cpu-*.so"))
	if err != nil || len(variants) == 0 {
		t.Fatalf("no CPU backends in %s: %v", r.Bins, err)
	}
	type run struct {
		backend string
		threads int
	}
	runs := []run{{r.Bins, 1}, {r.Bins, 3}}
	for _, v := range variants {
		runs = append(runs, run{v, 3})
	}
	for _, e := range kernels.InPlace {
		if len(e.Types) == 0 {
			t.Errorf("%s %s: no types", e.Op, e.Variant)
		}
		for _, typ := range e.Types {
			for _, rn := range runs {
				name := strings.Join([]string{e.Op, e.Variant, typ, filepath.Base(rn.backend), strconv.Itoa(rn.threads)}, "/")
				out, code := kernelCheck(t, r, e.Op, e.Variant, typ, rn.backend, rn.threads)
				switch {
				case code == 101:
					t.Errorf("%s: kernel-check has no check for the entry:\n%s", name, out)
				case code != 0 || strings.Contains(out, "FAIL"):
					t.Errorf("%s: exit %d:\n%s", name, code, out)
				case strings.HasPrefix(out, "skip "):
				case !strings.Contains(out, "output over source"):
					t.Errorf("%s: no overlay was checked:\n%s", name, out)
				}
			}
		}
	}
}

// TestKernelCheckFails: kernel-check can fail. An overlay one element off
// computes other bytes than separate memory (the control), and an entry it
// has no check for is refused.
func TestKernelCheckFails(t *testing.T) {
	r := setup(t)
	if out, code := kernelCheck(t, r, "control", "", "f32", r.Bins, 2); code != 0 || !strings.Contains(out, "ok control") {
		t.Errorf("control: exit %d:\n%s", code, out)
	}
	if out, code := kernelCheck(t, r, "GLU", "NO_SUCH_GLU", "f32", r.Bins, 1); code != 101 {
		t.Errorf("an unknown entry: exit %d, want 101:\n%s", code, out)
	}
	if out, code := kernelCheck(t, r, "GLU", "SWIGLU_OAI", "f16", r.Bins, 1); code != 101 {
		t.Errorf("a type with no check: exit %d, want 101:\n%s", code, out)
	}
}

// kernelCheck runs kernel-check and returns its standard output and exit
// status.
func kernelCheck(t *testing.T, r *Rig, op, variant, typ, backend string, threads int) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(r.Out, "kernel-check"), backend, op, variant, typ, strconv.Itoa(threads))
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("kernel-check: %v", err)
	}
	return string(out), 0
}
