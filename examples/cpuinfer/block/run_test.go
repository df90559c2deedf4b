package block

import (
	"errors"
	"math"
	"testing"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

func tiny(t *testing.T, forced bool) *Weights {
	t.Helper()
	c, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	c.Forced = forced
	w, err := NewWeights(c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// tinyReference returns the tiny preset's weights, greedy or forced, and
// the per-tensor reference run over them.
func tinyReference(t *testing.T, forced bool) (*Weights, *Result, ReferenceStats) {
	t.Helper()
	w := tiny(t, forced)
	ref, st, err := Reference(w)
	if err != nil {
		t.Fatal(err)
	}
	return w, ref, st
}

// TestRunMatchesReference is the example's claim: under every safe policy,
// greedy and forced, the arena run is bit-identical to the per-tensor
// reference, the Allocator's invariants hold after every call, the run
// allocates exactly Config.NoReuseBytes and leaves the Allocator empty.
func TestRunMatchesReference(t *testing.T) {
	for _, forced := range []bool{false, true} {
		w, ref, rst := tinyReference(t, forced)
		noReuse := w.Config.NoReuseBytes(256)
		for _, p := range subarena.SafePolicies() {
			res, st, err := Run(w, Options{Policy: p, Check: true})
			if err != nil {
				t.Fatalf("forced=%v %v: %v", forced, p, err)
			}
			if err := Compare(res, ref); err != nil {
				t.Fatalf("forced=%v %v: %v", forced, p, err)
			}
			if st.AllocBytes != noReuse || st.Capacity != noReuse {
				t.Fatalf("%v: allocated %d bytes of %d, NoReuseBytes says %d", p, st.AllocBytes, st.Capacity, noReuse)
			}
			if st.HighWater <= 0 || st.HighWater > st.Capacity || st.PeakInUse > st.HighWater {
				t.Fatalf("%v: figures %+v", p, st)
			}
			t.Logf("forced=%v %-20v HWM %6d of %6d (reference %d)", forced, p, st.HighWater, st.Capacity, rst.TotalBytes)
		}
	}
}

// TestRunWaitsForSpace: in an arena smaller than what the run allocates,
// with the compute engine stalled until the host first finds no space, the
// host must wait for the work the Allocator names and retry — and the
// result is still bit-identical. Under the after-users policies nothing
// can return while compute is stalled (every other engine waits for it), so
// some allocation certainly stalls; under the fenced policies it may instead reuse
// compute's bytes in compute order.
func TestRunWaitsForSpace(t *testing.T) {
	for _, forced := range []bool{false, true} {
		w, ref, _ := tinyReference(t, forced)
		for _, p := range subarena.SafePolicies() {
			gate := make(chan struct{})
			open := false
			hk := hooks{
				beforeOp: func(e sasync.EngineID) {
					if e == 0 { // compute, the first engine
						<-gate
					}
				},
				stalled: func() {
					if !open {
						open = true
						close(gate)
					}
				},
			}
			res, st, err := run(w, Options{Policy: p, Capacity: tight, Check: true}, hk)
			if err != nil {
				t.Fatalf("forced=%v %v: %v", forced, p, err)
			}
			if err := Compare(res, ref); err != nil {
				t.Fatalf("forced=%v %v: %v", forced, p, err)
			}
			fenced := p == subarena.SubrangeFenced || p == subarena.WholeFenced
			if st.Stalls == 0 && !fenced {
				t.Fatalf("forced=%v %v: no allocation stalled in a %d-byte arena with compute stalled", forced, p, tight)
			}
			if st.HighWater > tight {
				t.Fatalf("%v: high-water mark %d beyond the arena", p, st.HighWater)
			}
			t.Logf("forced=%v %-20v HWM %6d of %6d, stalls %d", forced, p, st.HighWater, st.Capacity, st.Stalls)
		}
	}
}

// tight is an arena smaller than a tiny run's prefill alone needs without
// reuse (about 20 KiB), in which a roomy run's 10-20 KiB high-water mark
// does not always fit either.
const tight = 16 << 10

// TestIROrderWrongWithSlowConsumer: under ir-order a logits buffer goes
// back to the arena at Release although the consumer has not read its last
// row; with the consumer held until compute and copy are done, later steps
// have certainly written over those bytes. The run must then be rejected
// or produce a result that differs from the reference — and the same
// program with the same held consumer is bit-identical under every safe
// policy, so the gate alone changes nothing.
func TestIROrderWrongWithSlowConsumer(t *testing.T) {
	w, ref, _ := tinyReference(t, true)
	res, _, err := Run(w, Options{Policy: subarena.IROrder, HoldConsumer: true, Check: true})
	switch {
	case err != nil:
		t.Logf("ir-order rejected: %v", err)
	default:
		cerr := Compare(res, ref)
		if cerr == nil {
			t.Fatal("ir-order with a held consumer matched the reference: premature reuse went unseen")
		}
		if !errors.Is(cerr, ErrMismatch) {
			t.Fatalf("compare: %v", cerr)
		}
		values, steps := Diff(res, ref)
		if values == 0 {
			t.Fatalf("ir-order result differs (%v) but no logits do", cerr)
		}
		t.Logf("ir-order produced a wrong result: %d logits in %d of %d steps differ (%v)", values, steps, w.Config.Steps+1, cerr)
	}
	for _, p := range subarena.SafePolicies() {
		res, _, err := Run(w, Options{Policy: p, HoldConsumer: true, Check: true})
		if err != nil {
			t.Fatalf("%v with held consumer: %v", p, err)
		}
		if err := Compare(res, ref); err != nil {
			t.Fatalf("%v with held consumer: %v", p, err)
		}
	}
}

// TestResultsDependOnTheModel guards against a vacuous comparison: another
// seed, or greedy instead of forced decoding, changes the result, and a
// single flipped bit is caught.
func TestResultsDependOnTheModel(t *testing.T) {
	w, ref, _ := tinyReference(t, false)
	c := w.Config
	c.Seed++
	w2, err := NewWeights(c)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := Reference(w2)
	if err != nil {
		t.Fatal(err)
	}
	if Compare(other, ref) == nil {
		t.Fatal("two seeds gave the same result")
	}
	again, _, err := Reference(w)
	if err != nil {
		t.Fatal(err)
	}
	if err := Compare(again, ref); err != nil {
		t.Fatalf("the reference is not deterministic: %v", err)
	}
	for _, flip := range []func(r *Result){
		func(r *Result) { r.Logits[2][5] = math.Float32frombits(math.Float32bits(r.Logits[2][5]) ^ 1) },
		func(r *Result) { r.K[1][7] = math.Float32frombits(math.Float32bits(r.K[1][7]) ^ 1) },
		func(r *Result) { r.V[0][len(r.V[0])-1] = -r.V[0][len(r.V[0])-1] },
		func(r *Result) { r.Next[0]++ },
		func(r *Result) { r.Tokens = r.Tokens[1:] },
	} {
		bad, _, _ := Reference(w)
		flip(bad)
		if err := Compare(bad, ref); !errors.Is(err, ErrMismatch) {
			t.Fatalf("a changed result compared %v", err)
		}
	}
	if c.Steps > 0 && ref.Tokens[c.Prompt] != ref.Next[0] {
		t.Fatalf("greedy decoding fed %d, argmax was %d", ref.Tokens[c.Prompt], ref.Next[0])
	}
}

// TestBadInput: invalid configurations and options are refused with
// ErrInvalidConfig before anything runs; views that are not float32
// tensors with ErrLayout.
func TestBadInput(t *testing.T) {
	good, _ := Preset("tiny")
	for name, mut := range map[string]func(*Config){
		"dim":        func(c *Config) { c.Dim = 0 },
		"odd heads":  func(c *Config) { c.Heads = 3 },
		"odd width":  func(c *Config) { c.Dim, c.Heads = 6, 2 },
		"vocab":      func(c *Config) { c.Vocab = 1 },
		"layers":     func(c *Config) { c.Layers = 0 },
		"prompt":     func(c *Config) { c.Prompt = 0 },
		"steps":      func(c *Config) { c.Steps = -1 },
		"chunk":      func(c *Config) { c.Chunk = 0 },
		"huge":       func(c *Config) { c.FFN = 1 << 20 },
		"long":       func(c *Config) { c.Prompt, c.Steps = limit, 1 },
		"zero value": func(c *Config) { *c = Config{} },
	} {
		c := good
		mut(&c)
		if _, err := NewWeights(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: NewWeights: %v", name, err)
		}
		if _, _, err := Reference(&Weights{Config: c}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Reference: %v", name, err)
		}
		if _, _, err := Run(&Weights{Config: c}, Options{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Run: %v", name, err)
		}
	}
	if _, err := Preset("huge"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unknown preset: %v", err)
	}
	w := tiny(t, false)
	for name, opt := range map[string]Options{
		"hold greedy":  {HoldConsumer: true},
		"granule":      {Granule: 3},
		"capacity":     {Capacity: -1},
		"tiny granule": {Granule: 2},
	} {
		if _, _, err := Run(w, opt); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := Run(w, Options{Policy: subarena.Policy(99)}); !errors.Is(err, subarena.ErrInvalidConfig) {
		t.Errorf("bad policy: %v", err)
	}
	// An arena too small for the largest tensor fails for space, cleanly.
	if _, _, err := Run(w, Options{Capacity: 1024}); !errors.Is(err, subarena.ErrNoSpace) {
		t.Errorf("tiny arena: %v", err)
	}

	tl, pt, a := newBackedAllocator(t, 4096)
	b, err := a.Alloc(1024, pt)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]strided.Layout{
		"bytes":      strided.Bytes(0, 16),
		"offset":     {Offset: 2, Shape: []int64{4}, Strides: []int64{4}, Elem: 4},
		"stride":     {Offset: 0, Shape: []int64{4}, Strides: []int64{6}, Elem: 4},
		"elem 8":     {Offset: 0, Shape: []int64{4}, Strides: []int64{8}, Elem: 8},
		"half float": {Offset: 0, Shape: []int64{4}, Strides: []int64{2}, Elem: 2},
	} {
		v, err := b.View(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := FromView(v); !errors.Is(err, ErrLayout) {
			t.Errorf("%s: FromView: %v", name, err)
		}
	}
	nb, err := subarena.New(subarena.Config{Capacity: 4096, Timeline: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ob, err := nb.Alloc(64, pt)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ob.Dense(0, []int64{16}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromView(v); !errors.Is(err, ErrLayout) {
		t.Errorf("view without backing: %v", err)
	}
	if _, err := floats(make([]byte, 6)); !errors.Is(err, ErrLayout) {
		t.Errorf("6 bytes as float32s: %v", err)
	}
}

// newBackedAllocator returns a Timeline with one compute engine, the
// point of its first op, and an Allocator of capacity bytes over host
// memory, closed when the test ends.
func newBackedAllocator(t *testing.T, capacity int64) (*sasync.Timeline, sasync.Point, *subarena.Allocator) {
	t.Helper()
	tl := sasync.NewTimeline()
	e, _ := tl.AddEngine("compute", sasync.Compute)
	a, err := subarena.New(subarena.Config{Capacity: capacity, Timeline: tl, Backing: backing(capacity)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	pt, _ := tl.Point(e)
	return tl, pt, a
}

// TestFromViewReadsThroughStrides: a tensor built from a strided view
// addresses exactly the elements the view's layout names.
func TestFromViewReadsThroughStrides(t *testing.T) {
	_, pt, a := newBackedAllocator(t, 8192)
	a.Alloc(256, pt) // the buffer under test does not start at offset 0
	b, err := a.Alloc(6*8*4, pt)
	if err != nil {
		t.Fatal(err)
	}
	f, err := floats(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := range f {
		f[i] = float32(i)
	}
	whole, err := b.Dense(0, []int64{6, 8}, 4)
	if err != nil {
		t.Fatal(err)
	}
	halves, err := whole.Split(1, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	up, err := halves[1].Transpose(0, 1) // [5, 6]
	if err != nil {
		t.Fatal(err)
	}
	rev, err := up.Slice(1, 5, -1, -2) // columns 5, 3, 1
	if err != nil {
		t.Fatal(err)
	}
	tt, err := FromView(rev)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		for j, col := range []int{5, 3, 1} {
			if got, want := tt.Data[at(tt, i, j)], float32(col*8+3+i); got != want {
				t.Fatalf("element (%d, %d) = %v, want %v", i, j, got, want)
			}
		}
	}
}
