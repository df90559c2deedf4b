// Command llamazoo measures libsubarena-ggml.so on the model zoo: for each
// model and configuration it runs llama.cpp (build.sh's llama-drive) with
// ggml's gallocr and with the library, checks that every step's logits are
// byte-identical, and prints a Markdown table of the compute buffer
// llama.cpp reports, the planner's lower bound and the CPU time of the
// allocator's calls.
//
//	bash integrations/llamacpp/build.sh integrations/llamacpp/.cache/out
//	cd integrations/llamacpp && go run ./cmd/llamazoo [-wide] [-out DIR]
//
// -wide runs the larger shapes (widths 2048-4096, gguf.Wide) instead of the
// zoo the tests run; -models picks some by name. The library's environment
// (SUBARENA_GGML_BUDGET, …) passes through to the runs. Every configuration disables llama.cpp's graph reuse
// (LLAMA_GRAPH_REUSE_DISABLE=1), so that the allocator runs for every
// ubatch and plan-cache hits can be timed against gallocr's alloc_graph in
// the same process flow (SUBARENA_GGML=gallocr: the library serves every
// call with ggml's gallocr and times it the same way).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/subarena/subarena/integrations/llamacpp"
	"github.com/subarena/subarena/integrations/llamacpp/gguf"
)

func main() {
	wide := flag.Bool("wide", false, "run the wide shapes (gguf.Wide) instead of the zoo")
	out := flag.String("out", llamacpp.DefaultOut("."), "build.sh's OUTDIR")
	threads := flag.Int("threads", 2, "llama.cpp threads")
	only := flag.String("models", "", "comma-separated model names to run (all when empty)")
	keep := flag.String("keep", "", "write the models to this directory and keep them")
	flag.Parse()
	if err := run(*out, *wide, *threads, *only, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "llamazoo:", err)
		os.Exit(1)
	}
}

func run(out string, wide bool, threads int, only, keep string) error {
	r, err := llamacpp.Open(out)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "llamazoo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	models := gguf.Zoo
	if wide {
		models = gguf.Wide
	}
	if only != "" {
		names := strings.Split(only, ",")
		models = slices.DeleteFunc(slices.Clone(models), func(m gguf.Model) bool { return !slices.Contains(names, m.Name) })
	}
	configs := []llamacpp.Config{
		{Threads: threads, NoReuse: true},
		{Threads: threads, NoReuse: true, OutputsMax: 1},
		{Threads: threads, NoReuse: true, FlashAttn: true, OutputsMax: 1},
		{Threads: threads, NoReuse: true, FlashAttn: true, Ubatch: 32, Chunks: "7,13,50"},
	}
	host, _ := os.Hostname()
	fmt.Printf("llamazoo on %s (%s/%s, %d CPUs), %s, llama.cpp from node-llama-cpp 3.21.1 (ggml 0.23.0); 100 prompt + 32 generated tokens, n_ctx 512, %d threads\n\n",
		host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), threads)
	fmt.Println("| model | configuration | gallocr MiB | subarena MiB | ratio | bound MiB | logits | plans | plan CPU ms | hit µs (gallocr µs) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---|---:|---:|---:|")
	for _, m := range models {
		path := filepath.Join(dir, m.Name+".gguf")
		if keep != "" {
			path = filepath.Join(keep, m.Name+".gguf")
		}
		if err := m.Write(path, r.Models, 1); err != nil {
			return err
		}
		for _, c := range configs {
			base, err := r.Drive(dir, path, c, true, []string{"SUBARENA_GGML=gallocr"})
			if err != nil {
				return fmt.Errorf("%s %s under gallocr: %w", m.Name, c, err)
			}
			got, err := r.Drive(dir, path, c, true, nil)
			if err != nil {
				return fmt.Errorf("%s %s under subarena: %w", m.Name, c, err)
			}
			same := "identical"
			if !bytes.Equal(base.Logits, got.Logits) || base.Stdout != got.Stdout {
				same = "DIFFER"
			}
			if got.Stats == nil || len(got.Stats.Allocators) == 0 || base.Stats == nil || len(base.Stats.Allocators) == 0 {
				return fmt.Errorf("%s %s: no stats", m.Name, c)
			}
			a, b := got.Stats.Allocators[0], base.Stats.Allocators[0]
			fmt.Printf("| %s | %s | %.2f | %.2f | %.3f | %.2f | %s | %d | %.1f | %.1f (%.1f) |\n",
				m.Name, c, base.Final, got.Final, got.Final/base.Final, float64(a.Bound)/(1<<20), same,
				a.Misses, float64(a.PlanNs)/1e6, float64(a.AllocGraphNs.HitMedian)/1e3, float64(b.AllocGraphNs.HitMedian)/1e3)
			os.Remove(filepath.Join(dir, "logits.bin"))
		}
		if keep == "" {
			os.Remove(path)
		}
	}
	return nil
}
