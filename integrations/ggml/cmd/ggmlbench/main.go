// Command ggmlbench compares subarena's graph allocator with ggml's
// (ggml_gallocr) on LLaMA-style and GPT-2-style decoder graphs built with
// ggml's own ops (LLaMA graphs with fused QKV and gate/up, and in
// llama.cpp's form, "-split": separate Q/K/V and gate/up matmuls joined by
// GGML_OP_GLU): buffer sizes (gallocr's, subarena's with offsets only and
// with strided in-place placements, the planner's lower bound, the online
// Allocator's high-water mark replaying the graph without and with
// wait-fenced reuse) and times
// (subarena's first plan, the one-pass greedy ggml.Allocator.FirstPlan, its
// final plan, the planner's with -budget beside the first plan, as Reserve
// plans, and a cache hit against gallocr's reserve and alloc_graph), and the bound and plan of the graph with its nodes
// reordered (ggml.ReorderGraph: memory-aware list scheduling, kept only
// when neither is above the graph's own order's; "reord/strided" is the
// reordered plan over the strided one; "any-order bound" is
// plan.OrderBound, which no plan of any order is below). Weights are never allocated: graphs are only planned and
// placed, never computed (the module's tests compute them).
//
//	go run ./cmd/ggmlbench            # widths 256-2048, prefill and decode, batch 1 and 8
//	go run ./cmd/ggmlbench -big       # and LLaMA-7B and GPT-2-small graphs
//	go run ./cmd/ggmlbench -run 7b -min 1s
//	go run ./cmd/ggmlbench -big -sizes -dump /tmp/graphs   # and write each graph's trace
//
// Times are CPU time of the calling thread (wall time where that is not
// available), averaged over repetitions filling -min.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"
	"unsafe"

	"github.com/subarena/subarena/integrations/ggml"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
	"github.com/subarena/subarena/trace/replay"
)

func main() {
	big := flag.Bool("big", false, "include LLaMA-7B and GPT-2-small graphs")
	run := flag.String("run", "", "only graphs whose name matches this regular expression")
	minTime := flag.Duration("min", 100*time.Millisecond, "time to spend measuring each operation")
	noTimes := flag.Bool("sizes", false, "sizes only, no times")
	budget := flag.Duration("budget", 0, "search budget of each strided plan (0: greedy, as AllocGraph plans by default)")
	dump := flag.String("dump", "", "write each measured graph as a subarena-trace/v1 file DIR/GRAPH.json (ggml.Dump), for subarena plan, replay, check and viz")
	flag.Parse()
	var re *regexp.Regexp
	if *run != "" {
		var err error
		if re, err = regexp.Compile(*run); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\tnodes\tgallocr\toffsets\tstrided\tbound\tproven\tonline\tonline+wait\tstrided/gallocr\t"+
		"reord bound\treord plan\treord/strided\tany-order bound\t"+
		"first\tfinal\thit\treserve\talloc_graph\tfirst/reserve\tfinal/reserve\thit/alloc_graph\t")
	var logLLaMA, logGPT2 []float64
	logs := map[string][]float64{} // by architecture and step kind
	atBound, n, onlineOK, reordered, orderOptimal := 0, 0, 0, 0, 0
	var onlineOver []string // graphs on which the online Allocator needs more than gallocr
	var reordLogs []float64
	var firstRatios, finalRatios, hitRatios []float64
	worst := 0.0
	for _, sh := range ggmltest.Shapes(*big) {
		if re != nil && !re.MatchString(sh.Name) {
			continue
		}
		r, err := measureShape(sh, *minTime, !*noTimes, *budget, *dump)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", sh.Name, err)
			os.Exit(1)
		}
		ratio := float64(r.strided) / float64(r.gallocr)
		worst = max(worst, ratio)
		if sh.Params.Arch == ggmltest.LLaMA {
			logLLaMA = append(logLLaMA, math.Log(ratio))
		} else {
			logGPT2 = append(logGPT2, math.Log(ratio))
		}
		key := class(sh)
		logs[key] = append(logs[key], math.Log(ratio))
		n++
		if r.strided == r.bound {
			atBound++
		}
		times := "\t\t\t\t\t\t\t\t"
		if !*noTimes {
			times = fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t", dur(r.first), dur(r.final), dur(r.hit), dur(r.reserve), dur(r.alloc),
				r.first/r.reserve, r.final/r.reserve, r.hit/r.alloc)
			firstRatios = append(firstRatios, r.first/r.reserve)
			finalRatios = append(finalRatios, r.final/r.reserve)
			hitRatios = append(hitRatios, r.hit/r.alloc)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%d\t%.3f\t%d\t%d\t%.3f\t%d\t%s\n", sh.Name, r.nodes, r.gallocr, r.offsets, r.strided,
			r.bound, r.proven, r.online, r.onlineWait, ratio, r.reordBound, r.reordPlan, float64(r.reordPlan)/float64(r.strided), r.orderBound, times)
		if r.strided-r.orderBound <= r.granule {
			orderOptimal++
		}
		if r.reordPlan < r.strided || r.reordBound < r.bound {
			reordered++
		}
		reordLogs = append(reordLogs, math.Log(float64(r.reordPlan)/float64(r.strided)))
		if r.online <= r.gallocr {
			onlineOK++
		} else {
			onlineOver = append(onlineOver, fmt.Sprintf("%s %.3f×", sh.Name, float64(r.online)/float64(r.gallocr)))
		}
	}
	tw.Flush()
	fmt.Printf("\nstrided/gallocr geomean: LLaMA-style %s, GPT-2-style %s; worst %.3f; %d of %d graphs at the planner's bound\n",
		geomean(logLLaMA), geomean(logGPT2), worst, atBound, n)
	for _, k := range classes {
		if len(logs[k]) > 0 {
			fmt.Printf("  %-19s %s\n", k, geomean(logs[k]))
		}
	}
	fmt.Printf("reordered/fixed-order plan geomean %s; reordering lowered the bound or plan on %d of %d graphs\n", geomean(reordLogs), reordered, n)
	fmt.Printf("the fixed order's plan is within a granule of the any-order bound (no reordering can lower it more) on %d of %d graphs\n", orderOptimal, n)
	if err := branches(re); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("online (the Allocator replaying the graph, subrange-fenced) at or below gallocr's buffer on %d of %d graphs\n", onlineOK, n)
	for _, o := range onlineOver {
		fmt.Printf("  online above gallocr: %s\n", o)
	}
	if !*noTimes {
		fmt.Printf("first/reserve %s; at most 10 on %d of %d graphs\n", spread(firstRatios), countAtMost(firstRatios, 10), len(firstRatios))
		fmt.Printf("final/reserve %s\n", spread(finalRatios))
		fmt.Printf("hit/alloc_graph %s; at most 1.0 on %d of %d graphs\n", spread(hitRatios), countAtMost(hitRatios, 1), len(hitRatios))
	}
	what := "wall time"
	if ggmltest.HaveThreadCPU {
		what = "CPU time of the calling thread"
	}
	fmt.Printf("times: %s per call, averaged over repetitions filling -min; first = the first plan (FirstPlan: "+
		"one greedy pass, reading the graph included; what a miss places once the buffer exists, when it fits); final = "+
		"the planner's plan with -budget %v beside the first plan (Plan, as Reserve plans); hit = AllocGraph placing a graph from "+
		"its cached plan; reserve and alloc_graph = ggml_gallocr_reserve and ggml_gallocr_alloc_graph\n", what, *budget)
}

// spread is "LO–HI (median M)" of xs.
func spread(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(xs))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.2f–%.2f (median %.2f)", s[0], s[len(s)-1], med)
}

// countAtMost counts the xs at most limit.
func countAtMost(xs []float64, limit float64) int {
	n := 0
	for _, x := range xs {
		if x <= limit {
			n++
		}
	}
	return n
}

// classes are the kinds of graph the summary reports apart, in its order.
var classes = []string{"llama prefill fused", "llama prefill split", "llama decode fused", "llama decode split",
	"gpt2 prefill", "gpt2 decode"}

// class is the kind of graph sh is: its architecture, prefill or decode, and
// for LLaMA whether QKV and gate/up are fused or split (llama.cpp's form).
func class(sh ggmltest.Shape) string {
	kind := "prefill"
	if sh.Tokens == 1 {
		kind = "decode"
	}
	key := sh.Params.Arch.String() + " " + kind
	if sh.Params.Arch == ggmltest.LLaMA {
		if sh.Params.Split {
			key += " split"
		} else {
			key += " fused"
		}
	}
	return key
}

type result struct {
	nodes                            int
	gallocr, offsets, strided, bound int64
	online, onlineWait               int64 // the online Allocator's HWM replaying the graph, without and with wait-fenced reuse
	reordBound, reordPlan            int64 // ggml.ReorderGraph's: the reordered graph's, or the fixed order's when it kept it
	orderBound                       int64 // plan.OrderBound: no order's plan is below it
	granule                          int64
	proven                           bool
	// CPU times in ns: the first plan (FirstPlan), the planner's with the
	// budget beside it (the final plan, Plan), a cache hit,
	// gallocr's reserve and alloc_graph.
	first, final, hit, reserve, alloc float64
}

func measureShape(sh ggmltest.Shape, minTime time.Duration, times bool, budget time.Duration, dump string) (*result, error) {
	mg := ggmltest.NewModelGraph(sh.Params, sh.Tokens, sh.Past)
	defer mg.Free()
	m, c, g := mg.Model, mg.Cache, mg.Graph
	r := &result{nodes: g.Nodes(), gallocr: g.GallocrSize()}
	if dump != "" {
		if err := dumpGraph(filepath.Join(dump, sh.Name+".json"), g.CGraph(), sh.Name); err != nil {
			return nil, err
		}
	}

	off, po, err := planWith(g.CGraph(), ggml.Options{NoRelayout: true})
	if err != nil {
		return nil, err
	}
	defer off.Free()
	r.offsets = po.Size
	a, p, err := planWith(g.CGraph(), ggml.Options{Budget: budget})
	if err != nil {
		return nil, err
	}
	defer a.Free()
	r.strided, r.bound, r.proven = p.Size, p.LowerBound, p.Result.Proven
	prog, err := p.Trace.Resolve()
	if err != nil {
		return nil, err
	}
	for _, wait := range []bool{false, true} {
		rr, err := replay.Run(prog, replay.Options{WaitReuse: wait})
		if err != nil {
			return nil, err
		}
		if wait {
			r.onlineWait = rr.HWM
		} else {
			r.online = rr.HWM
		}
	}
	// Reordered, on a graph of its own (ReorderGraph permutes its nodes).
	g2 := m.Build(c, sh.Tokens, sh.Past)
	defer g2.Free()
	o, err := ggml.ReorderGraph(g2.CGraph(), ggml.Options{Budget: budget})
	if err != nil {
		return nil, err
	}
	if o.Fixed.Size != r.strided || o.Fixed.LowerBound != r.bound {
		return nil, fmt.Errorf("ReorderGraph's fixed order: bound %d plan %d; Plan's %d %d", o.Fixed.LowerBound, o.Fixed.Size, r.bound, r.strided)
	}
	r.reordBound, r.reordPlan, r.orderBound = o.Fixed.LowerBound, o.Fixed.Size, o.OrderBound
	r.granule = o.Fixed.Trace.Granule
	if o.Nodes != nil {
		r.reordBound, r.reordPlan = o.Reordered.LowerBound, o.Reordered.Size
	}
	if !times {
		return r, nil
	}

	// gallocr: reserve (its planning, buffer already large enough), then
	// alloc_graph on a fresh copy of the reserved graph.
	ga := ggmltest.NewGallocr()
	defer ga.Free()
	if err := ga.Reserve(g); err != nil {
		return nil, err
	}
	r.reserve = measure(minTime, func() { ga.ReserveCGraph(g.CGraph()) })
	if err := ga.Alloc(g); err != nil {
		return nil, err
	}
	gbuf := g.OutputBuffer()
	r.alloc = measure(minTime, func() {
		g.Clear(gbuf)
		ga.AllocCGraph(g.CGraph())
	})
	g.Clear(gbuf)

	// subarena: plans (reading the graph and planning it, no cache) without
	// and with the search budget, and a placement (a cache hit) on a fresh
	// copy of the graph.
	if r.first, err = measurePlan(g.CGraph(), true, 0, minTime); err != nil {
		return nil, err
	}
	if r.final, err = measurePlan(g.CGraph(), false, budget, minTime); err != nil {
		return nil, err
	}
	if err := a.AllocGraph(g.CGraph()); err != nil {
		return nil, err
	}
	r.hit = measure(minTime, func() {
		g.Clear(nil) // the same walk as gallocr's loop; AllocGraph places every tensor afresh
		if err := a.AllocGraph(g.CGraph()); err != nil {
			panic(err)
		}
	})
	if st := a.Stats(); st.Plans != 1 {
		return nil, fmt.Errorf("placements planned again: %+v", st)
	}
	return r, nil
}

// measurePlan returns the time of planning graph afresh (no plan cache)
// with search budget budget: its first plan alone (first), or Plan.
func measurePlan(graph unsafe.Pointer, first bool, budget, minTime time.Duration) (float64, error) {
	nc, err := ggml.New(ggml.Options{CacheSize: -1, Budget: budget})
	if err != nil {
		return 0, err
	}
	defer nc.Free()
	plan := nc.Plan
	if first {
		plan = nc.FirstPlan
	}
	if _, err := plan(graph); err != nil {
		return 0, err
	}
	return measure(minTime, func() {
		if _, err := plan(graph); err != nil {
			panic(err)
		}
	}), nil
}

// planWith makes an Allocator with opts and returns it, for the caller to
// free, with its plan of graph.
func planWith(graph unsafe.Pointer, opts ggml.Options) (*ggml.Allocator, *ggml.Plan, error) {
	a, err := ggml.New(opts)
	if err != nil {
		return nil, nil, err
	}
	p, err := a.Plan(graph)
	if err != nil {
		a.Free()
		return nil, nil, err
	}
	return a, p, nil
}

// measure returns f's mean time in ns over repetitions filling minTime (at
// least three, after one warm-up call).
func measure(minTime time.Duration, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f()
	start, cpu0 := time.Now(), ggmltest.ThreadCPU()
	n := 0
	for n < 3 || time.Since(start) < minTime {
		f()
		n++
	}
	if ggmltest.HaveThreadCPU {
		return float64(ggmltest.ThreadCPU()-cpu0) / float64(n)
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	default:
		return fmt.Sprintf("%.1fus", ns/1e3)
	}
}

func geomean(logs []float64) string {
	if len(logs) == 0 {
		return "-"
	}
	s := 0.0
	for _, l := range logs {
		s += l
	}
	return fmt.Sprintf("%.3f (%d graphs)", math.Exp(s/float64(len(logs))), len(logs))
}

// branches prints the reordering of the synthetic graphs of independent
// branches (ggmltest.Branches), built with every branch's wide temporary
// live at once.
func branches(re *regexp.Regexp) error {
	var ns []int
	for _, n := range []int{2, 3, 5, 8} {
		if re == nil || re.MatchString(fmt.Sprintf("branches-%d", n)) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return nil
	}
	fmt.Println("\nsynthetic graphs of n independent branches, each temporary live at once in graph order:")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "graph\tnodes\tgallocr\tstrided\tbound\treord bound\treord plan\treord/strided\tany-order bound\tgallocr reordered\t")
	for _, n := range ns {
		br := ggmltest.NewBranches(n, uint64(n))
		br.Build()
		gal := br.GallocrSize()
		o, err := ggml.ReorderGraph(br.CGraph(), ggml.Options{})
		if err != nil {
			br.Free()
			return err
		}
		rb, rp := o.Fixed.LowerBound, o.Fixed.Size
		if o.Nodes != nil {
			rb, rp = o.Reordered.LowerBound, o.Reordered.Size
		}
		fmt.Fprintf(tw, "branches-%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%d\t%d\t\n", n, br.Nodes(), gal, o.Fixed.Size, o.Fixed.LowerBound,
			rb, rp, float64(rp)/float64(o.Fixed.Size), o.OrderBound, br.GallocrSize())
		br.Free()
	}
	return tw.Flush()
}

// dumpGraph writes graph as a subarena-trace/v1 file at path.
func dumpGraph(path string, graph unsafe.Pointer, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := ggml.Dump(f, graph, ggml.ReadOptions{Name: name}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
