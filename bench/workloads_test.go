package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/subarena/subarena/bench/benchtest"
	"github.com/subarena/subarena/trace"
)

// Every built-in workload, quick and full, generates a valid trace, and
// the same setting generates the same trace.
func TestWorkloadsValidAndDeterministic(t *testing.T) {
	for _, quick := range []bool{true, false} {
		for _, w := range Workloads(quick) {
			a, err := w.Build()
			if err != nil {
				t.Fatalf("%s (quick %v): %v", w.Name, quick, err)
			}
			if !quick {
				continue // Build validated it; the checks below are the same at any size
			}
			b, err := w.Build()
			if err != nil {
				t.Fatal(err)
			}
			if !a.Equal(b) {
				t.Fatalf("%s: two builds differ", w.Name)
			}
			// The JSON form round-trips: the trace is a plain subarena-trace/v1 document.
			back, err := trace.Parse(trace.Marshal(a))
			if err != nil || !back.Equal(a) {
				t.Fatalf("%s: round trip: %v", w.Name, err)
			}
		}
	}
}

// The seed changes the trace (costs, requests, programs), nothing else does.
func TestSeedMatters(t *testing.T) {
	gens := map[string]func(seed uint64) (*trace.Trace, error){
		"llama-engines": func(s uint64) (*trace.Trace, error) { c := LlamaSmall; c.Seed = s; return LlamaEngines(c) },
		"batching":      func(s uint64) (*trace.Trace, error) { c := BatchingSmall; c.Seed = s; return Batching(c) },
		"cnn": func(s uint64) (*trace.Trace, error) {
			c := CNNInceptionV3
			c.Frames, c.Seed = 1, s
			return CNN(c)
		},
		"random": func(s uint64) (*trace.Trace, error) { c := RandomSmall; c.Seed = s; return Random(c) },
	}
	for name, gen := range gens {
		a, err := gen(1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := gen(2)
		if err != nil {
			t.Fatal(err)
		}
		if a.Equal(b) {
			t.Fatalf("%s: seeds 1 and 2 give the same trace", name)
		}
	}
}

// Many random programs are valid traces (the generator never breaks a
// format rule).
func TestRandomProgramsValid(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		c := RandomConfig{Ops: 60, Engines: 1 + int(seed%4), MaxLive: 1 + int(seed%9), MaxSize: 1 << (8 + seed%12),
			WaitPercent: int64(seed * 7 % 101), SyncPercent: int64(seed % 5), Programs: 2, Seed: seed}
		if _, err := Random(c); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestBadConfigs(t *testing.T) {
	bad := map[string]func() error{
		"llama heads": func() error { c := LlamaSmall; c.Heads = 3; _, err := Llama(c); return err },
		"llama zero":  func() error { c := LlamaSmall; c.Layers = 0; _, err := LlamaEngines(c); return err },
		"llama lp":    func() error { c := LlamaSmall; c.LogprobPercent = 101; _, err := LlamaEngines(c); return err },
		"batching":    func() error { c := BatchingSmall; c.TokenBudget = 1; _, err := Batching(c); return err },
		"batching lo": func() error { c := BatchingSmall; c.PromptMax = 1; _, err := Batching(c); return err },
		"cnn":         func() error { c := CNNSmall; c.Channels = 6; _, err := CNN(c); return err },
		"cnn reduce":  func() error { c := CNNSmall; c.Reduce = []int64{0}; _, err := CNN(c); return err },
		"random":      func() error { c := RandomSmall; c.Engines = 9; _, err := Random(c); return err },
		"random size": func() error { c := RandomSmall; c.MaxSize = 1; _, err := Random(c); return err },
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, ErrInvalidWorkload) {
			t.Errorf("%s: error %v, want ErrInvalidWorkload", name, err)
		}
	}
	if _, err := LookupWorkload("nope", true); !errors.Is(err, ErrUnknownWorkload) {
		t.Fatalf("LookupWorkload: %v", err)
	}
	if _, err := RunMatrix(MatrixOptions{Quick: true, Workloads: []string{"nope"}}); !errors.Is(err, ErrUnknownWorkload) {
		t.Fatalf("RunMatrix: %v", err)
	}
}

// The scheduler of the batching workload serves every token of every
// request exactly once, within the budget, decode rows first.
func TestScheduleIteration(t *testing.T) {
	b := newBuilder("s", 7)
	var seqs []*batchSeq
	for i := range 20 {
		seqs = append(seqs, &batchSeq{id: i, prompt: 1 + b.intn(50), output: 1 + b.intn(9)})
	}
	const maxSeqs, budget = 6, 16
	waiting, running := seqs, []*batchSeq(nil)
	served := map[int]int64{}
	for iter := 0; len(waiting) > 0 || len(running) > 0; iter++ {
		if iter > 10000 {
			t.Fatal("scheduler does not finish")
		}
		for len(waiting) > 0 && len(running) < maxSeqs {
			running, waiting = append(running, waiting[0]), waiting[1:]
		}
		decoding := map[int]bool{}
		for _, s := range running {
			decoding[s.id] = s.prefilled == s.prompt
		}
		blocks := scheduleIteration(running, budget)
		var rows int64
		prefill := false
		for _, blk := range blocks {
			if blk.lo != rows || blk.hi <= blk.lo {
				t.Fatalf("iteration %d: blocks not packed: %+v", iter, blocks)
			}
			rows = blk.hi
			if !decoding[blk.seq.id] {
				prefill = true
			} else if prefill {
				t.Fatalf("iteration %d: decode row after a prefill chunk", iter)
			} else if blk.hi-blk.lo != 1 || !blk.sample {
				t.Fatalf("iteration %d: decode block %+v", iter, blk)
			}
			served[blk.seq.id] += blk.hi - blk.lo
		}
		if rows > budget || rows == 0 {
			t.Fatalf("iteration %d: %d rows", iter, rows)
		}
		kept := running[:0]
		for _, s := range running {
			if s.out < s.output {
				kept = append(kept, s)
			}
		}
		running = kept
	}
	for _, s := range seqs {
		// Rows: the prompt, then one per generated token after the first
		// (the first comes with the last prompt chunk).
		if want := s.prompt + s.output - 1; served[s.id] != want || s.out != s.output {
			t.Fatalf("sequence %d: %d rows, %d tokens; want %d rows, %d tokens", s.id, served[s.id], s.out, want, s.output)
		}
	}
}

// TestREADMEAllocatorColumn: README explains the "allocator allocs/s" column by the
// byte runs each workload's buffers are used through; the counts it gives are these.
func TestREADMEAllocatorColumn(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(data)), " ")
	says := map[string]string{
		"llama":         "`llama`'s %s buffers are used through %s byte runs",
		"llama-engines": "`llama-engines`' %s through %s",
		"batching":      "`batching`'s %s through %s",
	}
	for _, w := range Workloads(false) {
		format, ok := says[w.Name]
		if !ok {
			continue
		}
		p := benchtest.Build(t, w.Build)
		runs := 0
		for _, op := range p.Ops {
			for _, u := range op.Uses {
				fp, _ := p.Footprint(u.Ref)
				runs += fp.NumRuns()
			}
		}
		want := fmt.Sprintf(format, thousands(len(p.Buffers)), thousands(runs))
		if !strings.Contains(readme, want) {
			t.Errorf("README does not say %q", want)
		}
	}
}

// thousands writes n with comma separators, as README does.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
