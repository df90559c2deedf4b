// Command llamazoo measures libsubarena-ggml.so on the model zoo: for each
// model and configuration it runs llama.cpp (build.sh's llama-drive) with
// ggml's gallocr, with the library keeping to ggml's in-place rule
// (SUBARENA_GGML_INPLACE=ggml) and with the library as it ships, checks
// that every step's logits are byte-identical, and prints a Markdown table
// of the compute buffer llama.cpp reports, the planner's lower bound, what
// each mechanism contributed to the saving and the CPU time of the
// allocator's calls, then the geometric means of subarena / gallocr.
//
//	bash integrations/llamacpp/build.sh integrations/llamacpp/.cache/out
//	cd integrations/llamacpp && go run ./cmd/llamazoo [-wide] [-out DIR]
//
// -wide runs the larger shapes (widths 2048-4096, gguf.Wide) instead of the
// zoo the tests run; -models picks some by name; -keep DIR keeps the
// models written. The library's environment (SUBARENA_GGML_BUDGET, …)
// passes through to the runs. Every configuration disables llama.cpp's
// graph reuse (LLAMA_GRAPH_REUSE_DISABLE=1), so that the allocator runs for
// every ubatch and plan-cache hits can be timed against gallocr's
// alloc_graph in the same process flow (SUBARENA_GGML=gallocr: the library
// serves every call with ggml's gallocr and times it the same way).
//
// The columns: gallocr and subarena are llama.cpp's "CPU compute buffer
// size" at exit; bound is the planner's proven lower bound for the graphs
// it planned (the largest), "at bound" whether subarena reached it; ggml
// rule is the library's buffer with ggml's in-place rule only; "gallocr,
// unread leaves out" what ggml's gallocr reserves for the same graphs with
// the leaves no node reads (inp_embd on token input) left out, which it
// gives memory and the library gives memory dead from the start. The last
// columns replan the traces the library planned (SUBARENA_GGML_DUMP), the
// largest of each: with every tensor given whole lifetimes (an op reading a
// view reads its whole tensor) and no in-place outputs, then with subrange
// lifetimes and no in-place outputs; the saving over gallocr is split into
// placement (gallocr → whole lifetimes, no in place: offsets alone, minus
// what gallocr's own in-place saved), subrange lifetimes, ggml's in-place
// rule and the verified kernels (package kernels). "order bound" is the
// height no order of the graph's nodes goes below (plan.OrderBound), next
// to the bound of llama.cpp's order and of the best reordering the planner
// finds (memory-aware list scheduling; ggml computes the nodes in the
// order it is given, and independent nodes compute the same bytes in any
// order). "first plan" is a first plan of the run (the one greedy pass
// every plan starts from, reading the graph included: ggml.Plan.FirstPlan)
// beside ggml's reserve of the same graph in the same call (the stats'
// shadow gallocr), both wall time of the calling thread: of the run's
// plans, the one whose ratio of the two is the largest. The line under the
// tables gives that ratio over the rows.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/subarena/subarena/integrations/llamacpp"
	"github.com/subarena/subarena/integrations/llamacpp/gguf"
	"github.com/subarena/subarena/trace"
	"github.com/subarena/subarena/trace/plan"
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

const mib = 1 << 20

// Configs are the configurations llamazoo runs each model in.
func configs(threads int) []llamacpp.Config {
	return []llamacpp.Config{
		{Threads: threads, NoReuse: true},
		{Threads: threads, NoReuse: true, FlashAttn: true},
		{Threads: threads, NoReuse: true, OutputsMax: 1},
		{Threads: threads, NoReuse: true, FlashAttn: true, OutputsMax: 1},
		{Threads: threads, NoReuse: true, FlashAttn: true, Ubatch: 32, Chunks: "7,13,50"},
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
	host, _ := os.Hostname()
	fmt.Printf("llamazoo on %s (%s/%s, %d CPUs), %s, llama.cpp from node-llama-cpp 3.21.1 (ggml 0.23.0); 100 prompt + 32 generated tokens, n_ctx 512, %d threads; sizes in MiB\n\n",
		host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"), threads)
	fmt.Println("| model | configuration | gallocr | subarena | ratio | bound | at bound | logits | gallocr, unread leaves out | ratio | ggml rule | whole, no in place | no in place | saving: placement / subranges / ggml in place / verified in place | bound reordered | order bound | plan CPU ms | first plan µs (gallocr reserve µs) | hit µs (gallocr µs) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
	ratios := map[string][]float64{}
	var firsts []float64 // first plan / gallocr's reserve, per row
	rule := map[string][]float64{}
	read := map[string][]float64{}
	for _, m := range models {
		path := filepath.Join(dir, m.Name+".gguf")
		if keep != "" {
			path = filepath.Join(keep, m.Name+".gguf")
		}
		if err := m.Write(path, r.Models, 1); err != nil {
			return err
		}
		for _, c := range configs(threads) {
			row, err := measure(r, dir, path, c)
			if err != nil {
				return fmt.Errorf("%s %s: %w", m.Name, c, err)
			}
			fmt.Printf("| %s | %s | %s |\n", m.Name, c, row.cells)
			key := configKey(c)
			ratios[key] = append(ratios[key], row.ratio)
			rule[key] = append(rule[key], row.ruleRatio)
			firsts = append(firsts, row.firstRatio)
			read[key] = append(read[key], row.readRatio)
		}
		if keep == "" {
			os.Remove(path)
		}
	}
	fmt.Println()
	fmt.Println("| configuration | subarena / gallocr, geomean | with ggml's in-place rule only | against gallocr with unread leaves out |")
	fmt.Println("|---|---:|---:|---:|")
	var all, allRule, allRead []float64
	for _, c := range configs(threads) {
		key := configKey(c)
		fmt.Printf("| %s | %.3f | %.3f | %.3f |\n", key, geomean(ratios[key]), geomean(rule[key]), geomean(read[key]))
		if c.OutputsMax == 1 {
			all, allRule, allRead = append(all, ratios[key]...), append(allRule, rule[key]...), append(allRead, read[key]...)
		}
	}
	fmt.Printf("| n_outputs_max=1, flash attention on and off | %.3f | %.3f | %.3f |\n", geomean(all), geomean(allRule), geomean(allRead))
	slices.Sort(firsts)
	if n := len(firsts); n > 0 {
		atMost := 0
		for _, f := range firsts {
			if f <= 10 {
				atMost++
			}
		}
		fmt.Printf("\nfirst plan / gallocr's reserve: %.2f–%.2f (median %.2f), at most 10 on %d of %d rows\n",
			firsts[0], firsts[n-1], firsts[n/2], atMost, n)
	}
	return nil
}

// configKey names c without its thread count.
func configKey(c llamacpp.Config) string { return c.String() }

type row struct {
	cells                       string
	ratio, ruleRatio, readRatio float64
	firstRatio                  float64 // the largest ratio of a first plan to gallocr's reserve of its graph
}

// measure runs model under c with gallocr, with ggml's in-place rule and
// as the library ships, and replans the library's traces.
func measure(r *llamacpp.Rig, dir, model string, c llamacpp.Config) (row, error) {
	base, err := r.Drive(dir, model, c, true, []string{"SUBARENA_GGML=gallocr"})
	if err != nil {
		return row{}, fmt.Errorf("under gallocr: %w", err)
	}
	dumps := filepath.Join(dir, "dumps")
	os.RemoveAll(dumps)
	if err := os.Mkdir(dumps, 0o755); err != nil {
		return row{}, err
	}
	defer os.RemoveAll(dumps)
	got, err := r.Drive(dir, model, c, true, []string{"SUBARENA_GGML_DUMP=" + dumps})
	if err != nil {
		return row{}, fmt.Errorf("under subarena: %w", err)
	}
	ggmlRule, err := r.Drive(dir, model, c, true, []string{"SUBARENA_GGML_INPLACE=ggml"})
	if err != nil {
		return row{}, fmt.Errorf("under subarena with ggml's in-place rule: %w", err)
	}
	same := "identical"
	for _, o := range []*llamacpp.Run{got, ggmlRule} {
		if !bytes.Equal(base.Logits, o.Logits) || base.Stdout != o.Stdout {
			same = "DIFFER"
		}
	}
	for _, o := range []*llamacpp.Run{base, got, ggmlRule} {
		if o.Stats == nil || len(o.Stats.Allocators) == 0 {
			return row{}, fmt.Errorf("no stats")
		}
	}
	a, b := got.Stats.Allocators[0], base.Stats.Allocators[0]
	re, err := replan(dumps)
	if err != nil {
		return row{}, err
	}
	atBound := "yes"
	if int64(got.Final*mib+0.5) > roundMiB(a.Bound) {
		atBound = "no"
	}
	readOnly := base.Final
	if len(b.GallocrReadSizes) == 1 && b.GallocrReadSizes[0] > 0 {
		readOnly = float64(b.GallocrReadSizes[0]) / mib
	}
	reserve := math.NaN()
	if a.GallocrReserveNs > 0 {
		reserve = float64(a.GallocrReserveNs)
	}
	cells := fmt.Sprintf("%.2f | %.2f | %.3f | %.2f | %s | %s | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f / %.2f / %.2f / %.2f | %.2f | %.2f | %.1f | %.1f (%.1f) | %.1f (%.1f)",
		base.Final, got.Final, got.Final/base.Final, float64(a.Bound)/mib, atBound, same, readOnly, got.Final/readOnly, ggmlRule.Final,
		float64(re.whole)/mib, float64(re.noInPlace)/mib,
		base.Final-float64(re.whole)/mib, float64(re.whole-re.noInPlace)/mib, float64(re.noInPlace)/mib-ggmlRule.Final,
		ggmlRule.Final-got.Final, float64(re.reordered)/mib, float64(re.orderBound)/mib,
		float64(a.PlanNs)/1e6, float64(a.FirstPlanNs)/1e3, reserve/1e3, float64(a.AllocGraphNs.HitMedian)/1e3,
		float64(b.AllocGraphNs.HitMedian)/1e3)
	return row{cells: cells, ratio: got.Final / base.Final, ruleRatio: ggmlRule.Final / base.Final, readRatio: got.Final / readOnly,
		firstRatio: float64(a.FirstPlanNs) / reserve}, nil
}

// roundMiB rounds n bytes up to llama.cpp's printing of MiB (2 decimals).
func roundMiB(n int64) int64 {
	return int64(math.Ceil(float64(n)/mib*100) / 100 * mib)
}

// replanned is the largest, over the traces of a run, of each replanning.
type replanned struct {
	whole, noInPlace      int64 // plan sizes: whole lifetimes and no in place; no in place
	reordered, orderBound int64 // the best reordering's bound; plan.OrderBound
}

// replan plans every trace in dir again (greedily, offsets only, as the
// library plans): without in-place outputs, with whole lifetimes too, and
// reordered.
func replan(dir string) (replanned, error) {
	var out replanned
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return out, fmt.Errorf("no traces in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return out, err
		}
		t, err := trace.Parse(b)
		if err != nil {
			return out, fmt.Errorf("%s: %w", f, err)
		}
		opts := plan.Options{NoRelayout: true}
		no := opts
		no.NoInPlace = true
		res, err := plan.Plan(t, no)
		if err != nil {
			return out, fmt.Errorf("%s: %w", f, err)
		}
		out.noInPlace = max(out.noInPlace, res.Plan.Size)
		if res, err = plan.Plan(wholeLifetimes(t), no); err != nil {
			return out, fmt.Errorf("%s, whole lifetimes: %w", f, err)
		}
		out.whole = max(out.whole, res.Plan.Size)
		p, err := t.Resolve()
		if err != nil {
			return out, fmt.Errorf("%s: %w", f, err)
		}
		ro, err := plan.PlanReordered(p, opts)
		if err != nil {
			return out, fmt.Errorf("%s, reordered: %w", f, err)
		}
		best := ro.Fixed.LowerBound
		if ro.Best != nil {
			best = min(best, ro.Best.LowerBound)
		}
		out.reordered = max(out.reordered, best)
		out.orderBound = max(out.orderBound, ro.OrderBound)
	}
	return out, nil
}

// wholeLifetimes returns t with every op's reads and writes of a view made
// reads and writes of the view's tensor: each tensor then lives, whole,
// from its first use through any view to its last.
func wholeLifetimes(t *trace.Trace) *trace.Trace {
	w := t.Clone()
	of := map[string]string{}
	for _, s := range w.Steps {
		if s.Kind == trace.KindView {
			of[s.Name] = s.Of
		}
	}
	root := func(n string) string {
		for {
			o, ok := of[n]
			if !ok {
				return n
			}
			n = o
		}
	}
	for i := range w.Steps {
		s := &w.Steps[i]
		if s.Kind != trace.KindOp {
			continue
		}
		s.Reads = dedupe(s.Reads, root)
		s.Writes = dedupe(s.Writes, root)
	}
	return w
}

func dedupe(names []string, root func(string) string) []string {
	var out []string
	for _, n := range names {
		if r := root(n); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
