// Command cpuinfer runs a small decoder block in pure Go float32 on
// subarena memory, across a compute, a copy and a consumer engine, under
// every safe release policy, and checks each run bit for bit against a
// reference in which every tensor has its own Go slice. It prints the
// arena's high-water mark against the reference's total bytes, then shows
// what the unsafe ir-order policy does to the same program when the
// consumer of the logits is slow.
//
// Usage:
//
//	go run ./examples/cpuinfer                       # the small size
//	go run ./examples/cpuinfer -size medium          # bigger: seconds
//	go run ./examples/cpuinfer -size large -steps 16 # any field overrides the size
//
// The exit status is 1 if any safe policy's result differs from the
// reference.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/examples/cpuinfer/block"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cpuinfer:", err)
		os.Exit(1)
	}
}

// errDiffers is returned when a safe policy's result is not bit-identical.
var errDiffers = errors.New("a safe policy's result differs from the reference")

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cpuinfer", flag.ContinueOnError)
	fs.SetOutput(out)
	size := fs.String("size", "small", "model and run size: tiny, small, medium or large")
	var c block.Config
	fs.IntVar(&c.Dim, "dim", 0, "model width D (overrides -size)")
	fs.IntVar(&c.Heads, "heads", 0, "attention heads H (overrides -size)")
	fs.IntVar(&c.FFN, "ffn", 0, "feed-forward width F (overrides -size)")
	fs.IntVar(&c.Vocab, "vocab", 0, "vocabulary V (overrides -size)")
	fs.IntVar(&c.Layers, "layers", 0, "decoder blocks (overrides -size)")
	fs.IntVar(&c.Prompt, "prompt", 0, "prefill tokens T (overrides -size)")
	fs.IntVar(&c.Steps, "steps", 0, "decode steps S (overrides -size)")
	fs.IntVar(&c.Chunk, "chunk", 0, "KV-cache chunk in positions (overrides -size)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of weights and tokens")
	forced := fs.Bool("forced", false, "feed seeded decode tokens instead of the greedy argmax")
	policy := fs.String("policy", "safe", "policy to run: safe (all four), or one of "+policyNames())
	capacity := fs.Int64("capacity", 0, "arena bytes (0: enough with no reuse at all)")
	granule := fs.Int64("granule", 0, "arena granule in bytes (0: the Allocator's default)")
	check := fs.Bool("check", false, "check the Allocator's invariants after every call (slow)")
	demo := fs.Bool("unsafe-demo", true, "also run ir-order with a held consumer to show premature reuse")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg, err := block.Preset(*size)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	override(&cfg.Dim, c.Dim, set["dim"])
	override(&cfg.Heads, c.Heads, set["heads"])
	override(&cfg.FFN, c.FFN, set["ffn"])
	override(&cfg.Vocab, c.Vocab, set["vocab"])
	override(&cfg.Layers, c.Layers, set["layers"])
	override(&cfg.Prompt, c.Prompt, set["prompt"])
	override(&cfg.Steps, c.Steps, set["steps"])
	override(&cfg.Chunk, c.Chunk, set["chunk"])
	cfg.Seed, cfg.Forced = c.Seed, *forced

	var policies []subarena.Policy
	if *policy == "safe" {
		for _, p := range subarena.Policies() {
			if p.Safe() {
				policies = append(policies, p)
			}
		}
	} else {
		p, err := subarena.ParsePolicy(*policy)
		if err != nil {
			return err
		}
		policies = []subarena.Policy{p}
	}

	w, err := block.NewWeights(cfg)
	if err != nil {
		return err
	}
	mode := "greedy"
	if cfg.Forced {
		mode = "forced tokens"
	}
	fmt.Fprintf(out, "decoder: D=%d H=%d F=%d V=%d layers=%d, prefill %d tokens + %d decode steps (%s), KV chunks of %d, seed %d\n",
		cfg.Dim, cfg.Heads, cfg.FFN, cfg.Vocab, cfg.Layers, cfg.Prompt, cfg.Steps, mode, cfg.Chunk, cfg.Seed)
	start := time.Now()
	ref, rst, err := block.Reference(w)
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	fmt.Fprintf(out, "reference: %d tensors, each its own Go slice: %s in total (%v)\n", rst.Tensors, bytes(rst.TotalBytes), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "generated tokens: %v\n\n", ref.Tokens[cfg.Prompt:])

	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tresult\tarena HWM\tHWM/reference\tpeak in use\tallocs\tno-reuse bytes\tstalls\ttime\t")
	differs := false
	var mismatches []string
	for _, p := range policies {
		start := time.Now()
		res, st, err := block.Run(w, block.Options{Policy: p, Capacity: *capacity, Granule: *granule, Check: *check})
		if err != nil {
			return fmt.Errorf("%v: %w", p, err)
		}
		verdict := "bit-identical"
		if cerr := block.Compare(res, ref); cerr != nil {
			verdict = "DIFFERS"
			if p.Safe() {
				differs = true
			}
			mismatches = append(mismatches, fmt.Sprintf("%v: %v", p, cerr))
		}
		fmt.Fprintf(tw, "%v\t%s\t%s\t%.1f%%\t%s\t%d\t%s\t%d\t%v\t\n", p, verdict, bytes(st.HighWater),
			100*float64(st.HighWater)/float64(rst.TotalBytes), bytes(st.PeakInUse), st.Allocs, bytes(st.AllocBytes),
			st.Stalls, time.Since(start).Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range mismatches {
		fmt.Fprintln(out, m)
	}
	if *demo {
		if err := unsafeDemo(cfg, *granule, out); err != nil {
			return err
		}
	}
	if differs {
		return errDiffers
	}
	return nil
}

// unsafeDemo runs ir-order with the consumer held until compute and copy
// are done (forced tokens, so nothing waits for it), against a reference
// with the same tokens.
func unsafeDemo(cfg block.Config, granule int64, out io.Writer) error {
	cfg.Forced = true
	w, err := block.NewWeights(cfg)
	if err != nil {
		return err
	}
	ref, _, err := block.Reference(w)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nir-order, consumer held until compute and copy finish (forced tokens): ")
	res, st, err := block.Run(w, block.Options{Policy: subarena.IROrder, Granule: granule, HoldConsumer: true})
	switch {
	case err != nil:
		fmt.Fprintf(out, "rejected: %v\n", err)
	case block.Compare(res, ref) == nil:
		fmt.Fprintf(out, "bit-identical (no premature reuse hit a logits row; HWM %s)\n", bytes(st.HighWater))
	default:
		values, steps := block.Diff(res, ref)
		fmt.Fprintf(out, "WRONG: %d logits in %d of %d steps differ from the reference, HWM %s\n"+
			"  (the logits bytes went back to the arena at Release while the consumer had not read them;\n"+
			"  later steps wrote over them: %v)\n", values, steps, cfg.Steps+1, bytes(st.HighWater), block.Compare(res, ref))
	}
	return nil
}

func override(dst *int, v int, set bool) {
	if set {
		*dst = v
	}
}

func policyNames() string {
	var names []string
	for _, p := range subarena.Policies() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// bytes formats n in B, KiB or MiB.
func bytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
