//go:build !subarena_extggml

package ggml

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

func onlineParams(arch ggmltest.Arch, seqs int, attn ggmltest.Attn) ggmltest.Params {
	ff := 160
	if arch == ggmltest.GPT2 {
		ff = 256
	}
	return ggmltest.Params{Arch: arch, Embd: 64, Heads: 2, FF: ff, Layers: 2, Vocab: 64, Ctx: 16, Seqs: seqs,
		Attn: attn, Seed: uint64(11 + 5*seqs + int(arch))}
}

func onlineCases(short bool) []ggmltest.Case {
	L, G := ggmltest.LLaMA, ggmltest.GPT2
	// ggml's threads meet at spinning barriers inside every node: two
	// threads on a busy machine cost far more than one, so one case has
	// them.
	cs := []ggmltest.Case{
		{Params: onlineParams(L, 1, ggmltest.AttnSoftMax), Prompt: 4, Decode: 3, Threads: 1},
		{Params: onlineParams(G, 1, ggmltest.AttnMaskInf), Prompt: 4, Decode: 2, Threads: 2},
	}
	if !short {
		cs = append(cs,
			ggmltest.Case{Params: onlineParams(L, 8, ggmltest.AttnMaskInf), Prompt: 3, Decode: 2, Threads: 1},
			ggmltest.Case{Params: onlineParams(G, 8, ggmltest.AttnSoftMax), Prompt: 3, Decode: 2, Threads: 1},
		)
	}
	return cs
}

// onlineBytes is what a run's consumer and copy engines read, per step.
type onlineBytes struct {
	outputs, offloads [][][]byte
	cache             []byte // the KV cache after the last step
}

// onlineReference computes every step's whole graph with every tensor in its own
// memory (ggml_backend_alloc_ctx_tensors), and returns the bytes an online
// run must read, and the largest ggml_gallocr buffer of the steps' graphs.
func onlineReference(t *testing.T, m *ggmltest.Model, threads int, sched [][2]int) (*onlineBytes, int64) {
	t.Helper()
	be := ggmltest.NewBackend(threads)
	defer be.Free()
	c := m.NewCache()
	defer c.Free()
	ref := &onlineBytes{}
	var gallocr int64
	for i, st := range sched {
		g := m.Build(c, st[0], st[1])
		gallocr = max(gallocr, g.GallocrSize())
		free, err := g.AllocOwn()
		if err != nil {
			t.Fatal(err)
		}
		g.SetInputs(m, uint64(1000+i))
		if err := be.Compute(g); err != nil {
			t.Fatal(err)
		}
		outs, offs, err := readStep(g.CGraph(), st[0])
		if err != nil {
			t.Fatal(err)
		}
		ref.outputs = append(ref.outputs, outs)
		ref.offloads = append(ref.offloads, offs)
		free()
		g.Free()
	}
	ref.cache = c.Bytes()
	return ref, gallocr
}

// runOnline runs the schedule on an Online driver: the first graph's KV
// cache is adopted, then each step is submitted without waiting for the
// previous one (only its compute ops, before its graph is freed).
func runOnline(t *testing.T, m *ggmltest.Model, sched [][2]int, opts OnlineOptions) (*onlineBytes, OnlineStats) {
	t.Helper()
	c := m.NewCache()
	defer c.Free()
	o, err := NewOnline(opts)
	if err != nil {
		t.Fatal(err)
	}
	graphs := make([]*ggmltest.Graph, len(sched))
	defer func() {
		for _, g := range graphs {
			if g != nil {
				g.Free()
			}
		}
	}()
	steps := make([]*OnlineStep, len(sched))
	for i, st := range sched {
		g := m.Build(c, st[0], st[1])
		graphs[i] = g
		if i == 0 {
			for _, p := range StateTensors(g.CGraph()) {
				if err := o.Adopt(p); err != nil {
					t.Fatal(err)
				}
			}
		}
		s, err := o.Step(g.CGraph(), OnlineInput{SetInputs: func() { g.SetInputs(m, uint64(1000+i)) }, Tokens: st[0]})
		if err != nil {
			o.Close()
			t.Fatalf("%v, %d-byte arena, step %d: %v", opts.Policy, opts.Capacity, i, err)
		}
		steps[i] = s
		if i > 0 {
			if err := steps[i-1].WaitCompute(); err != nil {
				t.Fatal(err)
			}
			graphs[i-1].Free()
			graphs[i-1] = nil
		}
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	r := &onlineBytes{cache: c.Bytes()}
	for _, s := range steps {
		r.outputs = append(r.outputs, s.Outputs())
		r.offloads = append(r.offloads, s.Offloads())
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	return r, o.Stats()
}

// onlineDiff counts the bytes in which got differs from want, by kind.
func onlineDiff(t *testing.T, want, got *onlineBytes) (outputs, offloads, cache int) {
	t.Helper()
	if len(got.outputs) != len(want.outputs) {
		t.Fatalf("%d steps, want %d", len(got.outputs), len(want.outputs))
	}
	for i := range want.outputs {
		if len(got.outputs[i]) != len(want.outputs[i]) || len(got.offloads[i]) != len(want.offloads[i]) {
			t.Fatalf("step %d: %d outputs and %d offloads, want %d and %d", i,
				len(got.outputs[i]), len(got.offloads[i]), len(want.outputs[i]), len(want.offloads[i]))
		}
		for k := range want.outputs[i] {
			outputs += ggmltest.DiffBytes(want.outputs[i][k], got.outputs[i][k])
		}
		for k := range want.offloads[i] {
			offloads += ggmltest.DiffBytes(want.offloads[i][k], got.offloads[i][k])
		}
	}
	return outputs, offloads, ggmltest.DiffBytes(want.cache, got.cache)
}

// onlineJitter is a delay of 0 to 200 µs that varies with n.
func onlineJitter(seed int) func(int) time.Duration {
	return func(n int) time.Duration { return time.Duration((n*7+seed)%5) * 50 * time.Microsecond }
}

// TestOnlineBitExact runs LLaMA- and GPT-2-style decoders (prefill and
// decode steps, batch 1 and 8, 1 and 2 threads) node by node on the Online
// driver under every safe policy, in a roomy arena and in one that makes
// the host wait, with copy and consumer engines that take their time, and
// requires the bytes of a run with every tensor in its own memory: every
// output row the consumer read, every K/V row the copy engine offloaded,
// and the KV cache at the end.
func TestOnlineBitExact(t *testing.T) {
	for _, cc := range onlineCases(testing.Short()) {
		t.Run(cc.String(), func(t *testing.T) {
			m := ggmltest.NewModel(cc.Params)
			defer m.Free()
			sched := cc.Steps()
			ref, gallocr := onlineReference(t, m, cc.Threads, sched)
			cacheBytes := int64(len(ref.cache))
			for _, p := range subarena.SafePolicies() {
				for _, tight := range []bool{false, true} {
					capacity := cacheBytes + 8*gallocr
					if tight {
						if p == subarena.WholeFenced || p == subarena.SubrangeFenced {
							continue // they reuse as they go: no stall either way
						}
						capacity = cacheBytes + 3*gallocr
					}
					opts := OnlineOptions{Capacity: capacity, Policy: p, Threads: cc.Threads,
						CopyDelay: onlineJitter(1), ConsumerDelay: onlineJitter(3), Check: tight}
					got, st := runOnline(t, m, sched, opts)
					do, dk, dc := onlineDiff(t, ref, got)
					if do+dk+dc != 0 {
						t.Errorf("%v tight=%v: %d output, %d offload and %d cache bytes differ", p, tight, do, dk, dc)
					}
					t.Logf("%-20v tight=%-5v HWM %7d (arena %7d, resident %6d, beyond it %7d; gallocr %7d) allocs %d discards %d donations %d stalls %d",
						p, tight, st.Arena.HighWater, st.Arena.Capacity, st.Resident, st.Arena.HighWater-st.Resident, gallocr,
						st.Allocs, st.Discards, st.Donations, st.Stalls)
				}
			}
		})
	}
}

// TestOnlineIROrderHeldConsumer holds every consumer op until the compute
// engine has run a whole step's nodes past the output it reads. Under
// ir-order the output's bytes went back to the arena at Release, and the
// next step's nodes wrote over them first: the consumer reads wrong bytes.
// Every safe policy, with the same hold, reads exactly the reference.
func TestOnlineIROrderHeldConsumer(t *testing.T) {
	cc := ggmltest.Case{Params: onlineParams(ggmltest.LLaMA, 1, ggmltest.AttnSoftMax), Prompt: 4, Decode: 3, Threads: 1}
	m := ggmltest.NewModel(cc.Params)
	defer m.Free()
	sched := cc.Steps()
	ref, gallocr := onlineReference(t, m, cc.Threads, sched)
	probe := m.NewCache()
	g := m.Build(probe, 1, cc.Prompt)
	hold := g.Nodes()
	g.Free()
	probe.Free()
	capacity := int64(len(ref.cache)) + 8*gallocr
	for _, p := range append([]subarena.Policy{subarena.IROrder}, subarena.SafePolicies()...) {
		opts := OnlineOptions{Capacity: capacity, Policy: p, Threads: cc.Threads, HoldConsumer: hold, Check: true}
		got, st := runOnline(t, m, sched, opts)
		do, dk, dc := onlineDiff(t, ref, got)
		var rows int
		for _, outs := range ref.outputs {
			for _, o := range outs {
				rows += len(o)
			}
		}
		t.Logf("%-20v hold %d nodes: %d of %d output bytes differ, %d offload, %d cache; HWM %d",
			p, hold, do, rows, dk, dc, st.Arena.HighWater)
		if dk+dc != 0 {
			t.Errorf("%v: %d offload and %d cache bytes differ", p, dk, dc)
		}
		switch {
		case p == subarena.IROrder && do == 0:
			t.Errorf("ir-order with the consumer held: no output byte differs; premature reuse went unseen")
		case p.Safe() && do != 0:
			t.Errorf("%v with the consumer held: %d output bytes differ", p, do)
		}
	}
}

// TestOnlineHighWater reports, for a LLaMA- and a GPT-2-style decoder of
// batch 8, the arena each policy needed beyond the resident KV cache,
// against ggml_gallocr's buffer for the largest of the same graphs, with
// the default granule and with ggml's 32-byte alignment, and without
// Discard or in-place donation. Every run must be exact, and
// subrange-fenced, which hands a compute op's dead bytes to the next
// compute op at once, must stay within a quarter of gallocr's buffer,
// planned offline with the whole graph known.
func TestOnlineHighWater(t *testing.T) {
	for _, arch := range []ggmltest.Arch{ggmltest.LLaMA, ggmltest.GPT2} {
		cc := ggmltest.Case{Params: onlineParams(arch, 8, ggmltest.AttnSoftMax), Prompt: 3, Decode: 1, Threads: 1}
		m := ggmltest.NewModel(cc.Params)
		sched := cc.Steps()
		ref, gallocr := onlineReference(t, m, cc.Threads, sched)
		for _, p := range subarena.SafePolicies() {
			for _, v := range []struct {
				name string
				opts OnlineOptions
			}{
				{"default", OnlineOptions{}},
				{"granule 32", OnlineOptions{Granule: 32}},
				{"no discard", OnlineOptions{NoDiscard: true}},
				{"no in-place", OnlineOptions{NoInPlace: true}},
			} {
				if fenced := p == subarena.WholeFenced || p == subarena.SubrangeFenced; !fenced && v.name != "default" {
					continue // the host runs ahead of completions: timing, not layout
				}
				opts := v.opts
				opts.Capacity, opts.Policy, opts.Threads = int64(len(ref.cache))+8*gallocr, p, cc.Threads
				got, st := runOnline(t, m, sched, opts)
				if do, dk, dc := onlineDiff(t, ref, got); do+dk+dc != 0 {
					t.Errorf("%v %v %s: %d output, %d offload and %d cache bytes differ", arch, p, v.name, do, dk, dc)
				}
				beyond := st.Arena.HighWater - st.Resident
				if p == subarena.SubrangeFenced && !opts.NoInPlace && 4*beyond > 5*gallocr {
					t.Errorf("%v %v %s: %d bytes beyond the cache, gallocr %d", arch, p, v.name, beyond, gallocr)
				}
				t.Logf("%-5v %-20v %-11s HWM beyond the cache %7d = %.2f x gallocr's %d", arch, p, v.name, beyond,
					float64(beyond)/float64(gallocr), gallocr)
			}
		}
		m.Free()
	}
}

// TestOnlineErrors checks the driver's refusals: bad options, tensors
// Adopt cannot take, a nil graph, an arena too small for the live bytes
// (ErrNoSpace, and Close then reports what the failed step left), and any
// use after Close.
func TestOnlineErrors(t *testing.T) {
	for _, opts := range []OnlineOptions{{}, {Capacity: -1}, {Capacity: 4096, Granule: 16}, {Capacity: 4096, Granule: 384}} {
		if _, err := NewOnline(opts); !errors.Is(err, ErrOnline) {
			t.Errorf("NewOnline(%+v): %v, want ErrOnline", opts, err)
		}
	}
	m := ggmltest.NewModel(onlineParams(ggmltest.LLaMA, 1, ggmltest.AttnSoftMax))
	defer m.Free()
	c := m.NewCache()
	defer c.Free()
	g := m.Build(c, 2, 0)
	defer g.Free()
	state := StateTensors(g.CGraph())
	if len(state) != 4 {
		t.Fatalf("%d state tensors, want the K and V caches of 2 layers", len(state))
	}

	// The caches are 2048 bytes each: two fit, the third does not.
	o, err := NewOnline(OnlineOptions{Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Adopt(nil); !errors.Is(err, ErrOnline) {
		t.Errorf("Adopt(nil): %v", err)
	}
	for i, p := range state {
		err := o.Adopt(p)
		switch {
		case i < 2 && err != nil:
			t.Fatalf("Adopt %d: %v", i, err)
		case i == 2 && !errors.Is(err, subarena.ErrNoSpace):
			t.Errorf("Adopt %d into a full arena: %v, want ErrNoSpace", i, err)
		}
	}
	if err := o.Adopt(state[0]); !errors.Is(err, ErrOnline) {
		t.Errorf("Adopt twice: %v", err)
	}
	if _, err := o.Step(nil, OnlineInput{}); !errors.Is(err, ErrGraph) {
		t.Errorf("Step(nil): %v", err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := o.Step(g.CGraph(), OnlineInput{}); !errors.Is(err, ErrOnline) {
		t.Errorf("Step after Close: %v", err)
	}
	if err := o.Adopt(state[3]); !errors.Is(err, ErrOnline) {
		t.Errorf("Adopt after Close: %v", err)
	}

	// A step whose live bytes do not fit fails midway, and Close reports
	// the buffers it left.
	c2 := m.NewCache()
	defer c2.Free()
	g2 := m.Build(c2, 2, 0)
	defer g2.Free()
	o, err = NewOnline(OnlineOptions{Capacity: 4*2048 + 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range StateTensors(g2.CGraph()) {
		if err := o.Adopt(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Step(g2.CGraph(), OnlineInput{Tokens: 2}); !errors.Is(err, subarena.ErrNoSpace) {
		t.Errorf("Step in an arena the cache nearly fills: %v, want ErrNoSpace", err)
	}
	if err := o.Close(); !errors.Is(err, ErrOnline) {
		t.Errorf("Close after a failed step: %v, want ErrOnline", err)
	}
}

// A LLaMA-style decoder of 2 layers runs a 4-token prefill and two decode
// steps on the Online driver: its KV cache is adopted into the arena, each
// step's nodes are placed and computed one by one, the consumer reads the
// logits row of the last token (64 floats) and the copy engine offloads
// the K and V rows each layer stores (f16, 64 per token).
func ExampleOnline() {
	m := ggmltest.NewModel(ggmltest.Params{Arch: ggmltest.LLaMA, Embd: 64, Heads: 2, FF: 160, Layers: 2,
		Vocab: 64, Ctx: 16, Attn: ggmltest.AttnSoftMax, Seed: 1})
	defer m.Free()
	c := m.NewCache()
	defer c.Free()
	o, err := NewOnline(OnlineOptions{Capacity: 1 << 20, Policy: subarena.SubrangeFenced})
	if err != nil {
		panic(err)
	}
	var graphs []*ggmltest.Graph
	var steps []*OnlineStep
	for i, st := range [][2]int{{4, 0}, {1, 4}, {1, 5}} { // {tokens, past}
		g := m.Build(c, st[0], st[1])
		graphs = append(graphs, g)
		if i == 0 {
			for _, p := range StateTensors(g.CGraph()) {
				if err := o.Adopt(p); err != nil {
					panic(err)
				}
			}
		}
		s, err := o.Step(g.CGraph(), OnlineInput{SetInputs: func() { g.SetInputs(m, uint64(i)) }, Tokens: st[0]})
		if err != nil {
			panic(err)
		}
		steps = append(steps, s)
	}
	if err := o.Flush(); err != nil {
		panic(err)
	}
	for _, s := range steps {
		var kv []int
		for _, b := range s.Offloads() {
			kv = append(kv, len(b))
		}
		fmt.Printf("step %d: logits %d bytes, K/V rows offloaded %v\n", s.Index, len(s.Outputs()[0]), kv)
	}
	if err := o.Close(); err != nil {
		panic(err)
	}
	for _, g := range graphs {
		g.Free()
	}
	// Output:
	// step 0: logits 256 bytes, K/V rows offloaded [512 512 512 512]
	// step 1: logits 256 bytes, K/V rows offloaded [128 128 128 128]
	// step 2: logits 256 bytes, K/V rows offloaded [128 128 128 128]
}
