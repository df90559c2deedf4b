// Command analyze prints where the bytes above LiveLB go under the fenced
// policies, and what candidate placement and completion changes would give.
//
//	go run ./bench/analysis/cmd/analyze -what breakdown [-quick] [-workload W,..]
//	go run ./bench/analysis/cmd/analyze -what ideas [-quick]
//	go run ./bench/analysis/cmd/analyze -what sweep            (seeds 1-10, quick settings)
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/bench"
	"github.com/subarena/subarena/bench/analysis"
)

// breakdownFlags defines the flags that choose the breakdown's options and
// returns what builds those options once the flags are parsed.
func breakdownFlags() func() (analysis.Options, error) {
	fitName := flag.String("fit", "lean", "arena fit for the breakdown (fast or lean)")
	whole := flag.Bool("whole", false, "breakdown under whole-fenced instead of subrange-fenced")
	waitFence := flag.Bool("wait-fence", false, "breakdown with wait-fenced reuse (PredictSchedule)")
	compName := flag.String("completions", "sync-only", "sync-only, poll, stall or oracle")
	return func() (analysis.Options, error) {
		comp, err := analysis.ParseCompletions(*compName)
		if err != nil {
			return analysis.Options{}, err
		}
		fit, err := arena.ParseFit(*fitName)
		if err != nil {
			return analysis.Options{}, err
		}
		opts := analysis.Options{Mode: analysis.PolicyMode(*whole), Fit: fit, Completions: comp}
		if *waitFence {
			opts.PredictWait = analysis.PredictSchedule
		}
		return opts, nil
	}
}

func main() {
	quick := flag.Bool("quick", false, "quick workload settings")
	what := flag.String("what", "breakdown", "breakdown, ideas or sweep")
	wl := flag.String("workload", "", "comma-separated workloads (default: all)")
	only := flag.String("ideas", "", "regexp selecting ideas by name (default: all)")
	seeds := flag.Int("seeds", 10, "sweep: seeds 1..N")
	breakdown := breakdownFlags()
	flag.Parse()
	opts, err := breakdown()
	if err != nil {
		fail(err)
	}
	var names []string
	if *wl != "" {
		names = strings.Split(*wl, ",")
	}
	switch *what {
	case "breakdown":
		for _, w := range workloads(*quick, names) {
			if err := analysis.PrintBreakdown(os.Stdout, w.Name, info(w), opts); err != nil {
				fail(err)
			}
		}
	case "ideas":
		var ns []string
		var ins []*analysis.Info
		for _, w := range workloads(*quick, names) {
			ns = append(ns, w.Name)
			ins = append(ins, info(w))
		}
		if err := analysis.PrintIdeas(os.Stdout, ns, ins, pick(*only)); err != nil {
			fail(err)
		}
	case "sweep":
		if err := analysis.PrintSweep(os.Stdout, pick(*only), *seeds); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown -what %q", *what))
	}
}

// pick returns the ideas whose name matches expr.
func pick(expr string) []analysis.Idea {
	re, err := regexp.Compile(expr)
	if err != nil {
		fail(err)
	}
	var out []analysis.Idea
	for _, id := range analysis.Ideas() {
		if re.MatchString(id.Name) {
			out = append(out, id)
		}
	}
	return out
}

func workloads(quick bool, names []string) []bench.Workload {
	if names == nil {
		var out []bench.Workload
		for _, w := range bench.Workloads(quick) {
			if w.Name != "llama" {
				out = append(out, w)
			}
		}
		return out
	}
	var out []bench.Workload
	for _, n := range names {
		w, err := bench.LookupWorkload(n, quick)
		if err != nil {
			fail(err)
		}
		out = append(out, w)
	}
	return out
}

func info(w bench.Workload) *analysis.Info {
	t, err := w.Build()
	if err != nil {
		fail(err)
	}
	p, err := t.Resolve()
	if err != nil {
		fail(err)
	}
	in, err := analysis.NewInfo(p)
	if err != nil {
		fail(err)
	}
	return in
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "analyze:", err)
	os.Exit(1)
}
