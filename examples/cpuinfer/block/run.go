package block

import (
	"context"
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Options configure an arena run.
type Options struct {
	// Policy is the Allocator's release policy.
	Policy subarena.Policy
	// Capacity is the arena size in bytes, rounded up to the granule; 0
	// means Config.NoReuseBytes, which never runs out whatever the policy. A smaller arena makes the
	// host wait for the work the Allocator names when an allocation does
	// not fit.
	Capacity int64
	// Granule is the arena's granule; 0 means the Allocator's default.
	Granule int64
	// HoldConsumer holds the consumer engine until the compute and copy
	// engines have finished every op: a consumer slow enough that any
	// premature reuse of a logits row is certain to land before the row is
	// read. It needs Config.Forced (with greedy decoding the next step
	// waits for the consumer) and an arena in which no allocation has to
	// wait for the consumer.
	HoldConsumer bool
	// Check runs the Allocator's CheckInvariants after every Alloc, Use,
	// Release and Discard the run makes.
	Check bool
}

// RunStats are an arena run's figures.
type RunStats struct {
	Policy    subarena.Policy
	Capacity  int64 // arena bytes
	HighWater int64 // highest end offset ever allocated: the arena the run needed
	PeakInUse int64 // most arena bytes ever not clean at once
	// Allocs and AllocBytes count the allocations and their bytes rounded
	// to the granule: what a no-reuse allocator would need (it equals
	// Config.NoReuseBytes).
	Allocs     int
	AllocBytes int64
	Ops        int // ops submitted to the three engines
	// Stalls counts the allocations that did not fit at first: the host
	// waited for the engines to complete work and retried.
	Stalls int
}

// Engine names on the run's Timeline.
const (
	engineCompute  = "compute"
	engineCopy     = "copy"
	engineConsumer = "consumer"
)

// runner is one arena run: the Timeline with its three engines, the
// Executor that runs them, the Allocator over a []byte arena, and the host
// state of the program driving them.
type runner struct {
	w   *Weights
	c   Config
	opt Options

	tl *sasync.Timeline
	x  *sasync.Executor
	a  *subarena.Allocator

	compute, copier, consumer sasync.EngineID
	// The last op submitted to each engine.
	lastCompute, lastCopy, lastConsumer sasync.Event

	res *Result
	kv  [][]*chunk // [layer][chunk]: nil until the copy engine first writes it

	gate     chan struct{} // closed when the held consumer may run; nil if not held
	gateOpen bool
	st       RunStats
	hooks    hooks
}

// hooks let tests slow engines down deterministically.
type hooks struct {
	// beforeOp runs on the engine's goroutine before each op of engine.
	beforeOp func(engine sasync.EngineID)
	// stalled runs on the host when an allocation does not fit, before it
	// waits, and once more when every op has been submitted.
	stalled func()
}

// Run runs the model on three goroutine engines of a sync.Executor with
// every activation in one []byte-backed subarena Allocator, and returns
// what the consumer engine read and the copy engine offloaded. Under every
// safe policy the Result is bit-identical to Reference's; under IROrder it
// need not be.
func Run(w *Weights, opt Options) (*Result, RunStats, error) {
	return run(w, opt, hooks{})
}

func run(w *Weights, opt Options, hk hooks) (*Result, RunStats, error) {
	c := w.Config
	if err := c.Validate(); err != nil {
		return nil, RunStats{}, err
	}
	if opt.HoldConsumer && !c.Forced {
		return nil, RunStats{}, fmt.Errorf("%w: HoldConsumer needs Forced tokens (greedy decoding waits for the consumer)", ErrInvalidConfig)
	}
	if opt.Granule == 0 {
		opt.Granule = arena.DefaultGranule
	}
	if opt.Granule < 4 || opt.Granule&(opt.Granule-1) != 0 {
		return nil, RunStats{}, fmt.Errorf("%w: granule %d is not a power of two >= 4", ErrInvalidConfig, opt.Granule)
	}
	if opt.Capacity < 0 {
		return nil, RunStats{}, fmt.Errorf("%w: capacity %d", ErrInvalidConfig, opt.Capacity)
	}
	if opt.Capacity == 0 {
		opt.Capacity = c.NoReuseBytes(opt.Granule)
	}
	opt.Capacity = ranges.Granule(opt.Granule).Up(opt.Capacity)
	r := &runner{w: w, c: c, opt: opt, tl: sasync.NewTimeline(), res: newResult(c), hooks: hk}
	r.st.Policy, r.st.Capacity = opt.Policy, opt.Capacity
	var err error
	if r.compute, err = r.tl.AddEngine(engineCompute, sasync.Compute); err != nil {
		return nil, r.st, err
	}
	if r.copier, err = r.tl.AddEngine(engineCopy, sasync.Copy); err != nil {
		return nil, r.st, err
	}
	if r.consumer, err = r.tl.AddEngine(engineConsumer, sasync.Host); err != nil {
		return nil, r.st, err
	}
	r.a, err = subarena.New(subarena.Config{
		Capacity: opt.Capacity,
		Granule:  opt.Granule,
		Policy:   opt.Policy,
		Backing:  backing(opt.Capacity),
		Timeline: r.tl,
	})
	if err != nil {
		return nil, r.st, err
	}
	defer r.a.Close()
	if opt.HoldConsumer {
		r.gate = make(chan struct{})
	}
	r.kv = make([][]*chunk, c.Layers)
	for l := range r.kv {
		r.kv[l] = make([]*chunk, c.chunks())
	}
	copy(r.res.Tokens, w.Prompt)
	if c.Forced {
		copy(r.res.Tokens[c.Prompt:], w.ForcedTokens)
	}

	r.x = sasync.NewExecutor(r.tl)
	r.x.Start(context.Background())
	err = r.program()
	if r.hooks.stalled != nil {
		r.hooks.stalled()
	}
	if err == nil && r.gate != nil {
		err = r.release()
	}
	r.openGate()
	if cerr := r.x.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, r.st, err
	}
	if err := r.finish(); err != nil {
		return nil, r.st, err
	}
	return r.res, r.st, nil
}

// program is the host: the prefill, the decode steps, and a final flush of
// the KV chunks still in the arena.
func (r *runner) program() error {
	for s := 0; s <= r.c.Steps; s++ {
		if err := r.step(s); err != nil {
			return fmt.Errorf("step %d: %w", s, err)
		}
	}
	for l := range r.c.Layers {
		if err := r.flush(l); err != nil {
			return fmt.Errorf("flush layer %d: %w", l, err)
		}
	}
	return nil
}

// release lets the held consumer run once the compute and copy engines
// have finished everything.
func (r *runner) release() error {
	for _, ev := range []sasync.Event{r.lastCompute, r.lastCopy} {
		if !ev.IsZero() {
			if err := r.x.Wait(ev); err != nil {
				return err
			}
		}
	}
	r.openGate()
	return nil
}

func (r *runner) openGate() {
	if r.gate != nil && !r.gateOpen {
		r.gateOpen = true
		close(r.gate)
	}
}

// finish checks that the run left the Allocator empty and records its
// figures.
func (r *runner) finish() error {
	if err := r.a.CheckInvariants(); err != nil {
		return err
	}
	st := r.a.Stats()
	r.st.HighWater, r.st.PeakInUse = st.HighWater, st.PeakInUse
	if st.Live != 0 || st.Buffers != 0 || st.Users != 0 || st.Held != 0 || st.InUse != 0 {
		return fmt.Errorf("%w: %d live bytes in %d buffers, %d users, %d held, %d in use", ErrLeak, st.Live, st.Buffers, st.Users, st.Held, st.InUse)
	}
	return nil
}

// use is one view an op touches and how.
type use struct {
	v   *subarena.View
	acc subarena.Access
}

// submit queues fn on engine e after waits, then records every view it
// touches under its event — submit first, then Use: the Allocator accepts
// an event that has already completed.
func (r *runner) submit(e sasync.EngineID, waits []sasync.Event, fn func() error, uses ...use) (sasync.Event, error) {
	before := r.hooks.beforeOp
	ev, err := r.x.Submit(e, waits, func(context.Context) error {
		if before != nil {
			before(e)
		}
		return fn()
	})
	if err != nil {
		return ev, err
	}
	r.st.Ops++
	switch e {
	case r.compute:
		r.lastCompute = ev
	case r.copier:
		r.lastCopy = ev
	default:
		r.lastConsumer = ev
	}
	for _, u := range uses {
		if err := r.a.Use(u.v, ev, u.acc); err != nil {
			return ev, fmt.Errorf("use of %v by %v: %w", u.v, ev, err)
		}
		if err := r.check(); err != nil {
			return ev, err
		}
	}
	return ev, nil
}

func (r *runner) check() error {
	if !r.opt.Check {
		return nil
	}
	return r.a.CheckInvariants()
}

// alloc returns a buffer of elems float32s for a writer at engine e's next
// point. When nothing fits it waits for the work the Allocator names (or
// for everything in flight) and retries.
func (r *runner) alloc(e sasync.EngineID, elems int) (*subarena.Buffer, error) {
	size := int64(elems) * 4
	b, err := r.a.AllocWaiting(size, e, subarena.SpaceWait{
		Executor: r.x,
		Engines:  []sasync.EngineID{r.compute, r.copier, r.consumer},
		Waitable: r.waitable,
		Stalled:  r.stalled,
	})
	if err != nil {
		return nil, err
	}
	r.st.Allocs++
	r.st.AllocBytes += ranges.Granule(r.opt.Granule).Up(size)
	return b, r.check()
}

// stalled counts an allocation that found no space (once, on its first
// failed attempt) and runs the stalled hook.
func (r *runner) stalled(attempt int) {
	if attempt == 0 {
		r.st.Stalls++
	}
	if r.hooks.stalled != nil {
		r.hooks.stalled()
	}
}

// waitable reports whether the host may block on e's work: not on a held
// consumer, which runs only once the host lets it.
func (r *runner) waitable(e sasync.EngineID) bool {
	return e != r.consumer || r.gate == nil || r.gateOpen
}

func (r *runner) releaseBuf(b *subarena.Buffer) error {
	if err := r.a.Release(b); err != nil {
		return err
	}
	return r.check()
}

func (r *runner) discard(v *subarena.View) error {
	if err := r.a.Discard(v); err != nil {
		return err
	}
	return r.check()
}

// tensors returns the float32 tensors the views describe.
func tensors(vs ...*subarena.View) ([]Tensor, error) {
	out := make([]Tensor, len(vs))
	for i, v := range vs {
		t, err := FromView(v)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// dense views b as a row-major float32 [rows, cols] tensor.
func dense(b *subarena.Buffer, rows, cols int) (*subarena.View, error) {
	return b.Dense(0, []int64{int64(rows), int64(cols)}, 4)
}

// allocDense allocates a rows×cols float32 buffer at engine e's point and
// views it densely.
func (r *runner) allocDense(e sasync.EngineID, rows, cols int) (*subarena.Buffer, *subarena.View, error) {
	b, err := r.alloc(e, rows*cols)
	if err != nil {
		return nil, nil, err
	}
	v, err := dense(b, rows, cols)
	if err != nil {
		return nil, nil, err
	}
	return b, v, nil
}

// allocTensor is allocDense with the tensor over the new view.
func (r *runner) allocTensor(e sasync.EngineID, rows, cols int) (*subarena.Buffer, *subarena.View, Tensor, error) {
	b, v, err := r.allocDense(e, rows, cols)
	if err != nil {
		return nil, nil, Tensor{}, err
	}
	ts, err := tensors(v)
	if err != nil {
		return nil, nil, Tensor{}, err
	}
	return b, v, ts[0], nil
}

// computeThen submits fn on the compute engine with uses, then releases
// done (when not nil): the op was the last reader of its bytes.
func (r *runner) computeThen(done *subarena.Buffer, fn func() error, uses ...use) error {
	if _, err := r.submit(r.compute, nil, fn, uses...); err != nil {
		return err
	}
	if done == nil {
		return nil
	}
	return r.releaseBuf(done)
}
