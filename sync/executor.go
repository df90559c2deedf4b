package sync

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// ErrOpPanicked is wrapped (with ErrStopped) when an op's function panics;
// the Executor recovers the panic and stops as for any op error.
var ErrOpPanicked = errors.New("sync: op panicked")

// Executor runs real functions on goroutine-backed engines, in the order a
// Timeline prescribes: one goroutine per engine, each running its engine's
// ops in submission order, each op only after every op it waits for has
// completed. It is the Timeline made executable, for CPU inference and for
// tests that want real concurrency behind the happens-before model.
//
// Lifecycle: NewExecutor, Submit (before or after Start), Start, Wait as
// the host needs results, Close. Ops submitted before Start queue until
// Start. All methods are safe for concurrent use.
//
// Failure: the first op that returns an error (or panics, or finds its
// context ended) stops the Executor. Ops not yet started never run and
// their events never complete; Wait and Close return that first error
// (wrapped with ErrStopped, so errors.Is matches both ErrStopped and the
// op's own error), and so does every later Submit, which then records
// nothing.
type Executor struct {
	t *Timeline

	// mu guards every field below. Lock order: mu before t.mu, never the
	// reverse (the Timeline never calls into the Executor with its lock
	// held: subscribers run after Complete releases it).
	mu sync.Mutex
	// cond is broadcast on every submission, completion, failure, Close
	// and engine-goroutine exit.
	cond sync.Cond
	// queues[e][heads[e]:] are the ops submitted to e and not yet started,
	// in submission order.
	queues [MaxEngines][]execOp
	heads  [MaxEngines]int
	// started: Start ran. engines: how many engines have a goroutine.
	started bool
	engines int
	// live: engine goroutines not yet exited.
	live int
	// closing: Close was called; Submit fails with ErrClosed.
	closing bool
	// err: the first failure, wrapping ErrStopped; nil while healthy.
	err error

	group       *errgroup.Group
	stopCtxHook func() bool
	unsubscribe func()
}

// execOp is one submitted op waiting for its turn.
type execOp struct {
	ev Event
	// deps is ev's clock with ev's own component lowered to ev.Seq-1: the
	// op may start once every op deps covers has completed (its waits,
	// its engine's earlier ops, and everything host-synced before it).
	deps Clock
	fn   func(ctx context.Context) error
}

// NewExecutor returns an Executor over t (a new, empty Timeline if t is
// nil). It subscribes to t's completions until Close. The zero Executor is
// not usable.
func NewExecutor(t *Timeline) *Executor {
	if t == nil {
		t = NewTimeline()
	}
	x := &Executor{t: t}
	x.cond.L = &x.mu
	x.unsubscribe = t.Subscribe(func(Clock) {
		x.mu.Lock()
		x.cond.Broadcast()
		x.mu.Unlock()
	})
	return x
}

// Timeline returns the Timeline the Executor records its ops in.
func (x *Executor) Timeline() *Timeline { return x.t }

// Start launches one goroutine per engine of the Timeline (engines added
// after Start get none, and Submit to them fails with ErrUnknownEngine).
// ops run with a context derived from ctx that is cancelled when any op
// fails; cancelling ctx stops the Executor with ctx's cause as its error.
// Start after Start or after Close does nothing.
func (x *Executor) Start(ctx context.Context) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.started || x.closing {
		return
	}
	x.started = true
	x.engines = x.t.NumEngines()
	g, gctx := errgroup.WithContext(ctx)
	x.group = g
	x.live = x.engines
	for e := 0; e < x.engines; e++ {
		g.Go(func() error {
			defer func() {
				x.mu.Lock()
				x.live--
				x.cond.Broadcast()
				x.mu.Unlock()
			}()
			return x.run(gctx, EngineID(e))
		})
	}
	// Wake every waiter when the context ends while engines still run.
	// errgroup also cancels gctx once all goroutines have returned; by then
	// live == 0 and the hook records nothing.
	x.stopCtxHook = context.AfterFunc(gctx, func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.live > 0 {
			x.failLocked(fmt.Errorf("context ended: %w", context.Cause(gctx)))
		}
	})
}

// Submit records an op on engine e that waits for waits, in the Timeline,
// at once (so its event, points and fences are known immediately), and
// queues fn to run on e's goroutine once every earlier op of e and every
// wait has completed; then the Executor calls Complete on the event. A nil
// fn is an op that does nothing but order.
//
// It fails with ErrClosed after Close, with ErrStopped (wrapping the first
// failure) once an op has failed, with ErrUnknownEngine for an engine the
// Executor has no goroutine for, and with the Timeline's errors for bad
// waits. A failed Submit records nothing.
func (x *Executor) Submit(e EngineID, waits []Event, fn func(ctx context.Context) error) (Event, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closing {
		return Event{}, fmt.Errorf("executor submit to engine %d: %w", e, ErrClosed)
	}
	if x.err != nil {
		return Event{}, fmt.Errorf("executor submit to engine %d: %w", e, x.err)
	}
	if x.started && int(e) >= x.engines {
		return Event{}, fmt.Errorf("executor submit: engine %d was added after Start: %w", e, ErrUnknownEngine)
	}
	ev, deps, err := x.t.submitClock(e, waits)
	if err != nil {
		return Event{}, fmt.Errorf("executor: %w", err)
	}
	deps[e] = ev.Seq - 1
	x.queues[e] = append(x.queues[e], execOp{ev: ev, deps: deps, fn: fn})
	x.cond.Broadcast()
	return ev, nil
}

// Wait blocks the host until ev has completed and every subscriber of the
// Timeline has been told (Timeline.Delivered: an Allocator subscribed to it
// has given back what ev frees), then records HostSync(ev) so that every
// op submitted afterwards happens-after ev. ev may be any
// submitted op of the Timeline, including one completed by someone else.
// Before Start, Wait blocks until Start has run the op. It returns the
// Executor's first failure if there has been one (even if ev itself
// completed: like a sticky device error), ErrClosed if the Executor has
// shut down with ev still pending, and ErrUnknownEvent if ev was never
// submitted.
func (x *Executor) Wait(ev Event) error {
	if err := x.t.checkEvent(ev); err != nil {
		return fmt.Errorf("executor wait: %w", err)
	}
	x.mu.Lock()
	for !x.t.Completed(ev) && x.err == nil && !x.finishedLocked() {
		x.cond.Wait()
	}
	done, failure := x.t.Completed(ev), x.err
	x.mu.Unlock()
	if done {
		x.t.awaitDelivered(ev)
		if err := x.t.HostSync(ev); err != nil {
			return fmt.Errorf("executor wait: %w", err)
		}
	}
	if failure != nil {
		return failure
	}
	if !done {
		return fmt.Errorf("executor wait for %v: %w", ev, ErrClosed)
	}
	return nil
}

// Close stops accepting work, lets every engine run what it has queued
// (unless the Executor has failed), stops the goroutines and returns the
// first failure, or nil. Close blocks while a queued op waits for an event
// nothing will complete; cancel Start's context to abandon such work.
// Close before Start runs nothing: queued ops stay pending and their
// waiters get ErrClosed. Close may be called more than once.
func (x *Executor) Close() error {
	x.mu.Lock()
	x.closing = true
	x.cond.Broadcast()
	g := x.group
	x.mu.Unlock()
	if g != nil {
		_ = g.Wait() // x.err holds the first failure with its context
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stopCtxHook != nil {
		x.stopCtxHook()
	}
	x.unsubscribe()
	x.cond.Broadcast()
	return x.err
}

// finishedLocked reports whether no engine goroutine will run anything
// again. x.mu must be held.
func (x *Executor) finishedLocked() bool {
	return x.closing && x.live == 0
}

// failLocked records err as the failure unless one is recorded already,
// and wakes everyone. x.mu must be held.
func (x *Executor) failLocked(err error) {
	if x.err == nil {
		x.err = fmt.Errorf("%w: %w", ErrStopped, err)
	}
	x.cond.Broadcast()
}

// run is engine e's goroutine: it runs e's ops in order until Close has
// drained the queue or the Executor fails.
func (x *Executor) run(ctx context.Context, e EngineID) error {
	x.mu.Lock()
	for {
		op, ok := x.nextLocked(e)
		if !ok {
			x.mu.Unlock()
			return nil
		}
		x.mu.Unlock()

		err := ctx.Err()
		if err == nil {
			err = callOp(ctx, op)
		}
		if err == nil {
			if cerr := x.t.Complete(op.ev); cerr != nil {
				err = fmt.Errorf("completing: %w", cerr)
			}
		}

		x.mu.Lock()
		if err != nil {
			x.failLocked(fmt.Errorf("op %v on engine %d: %w", op.ev, e, err))
			x.mu.Unlock()
			return err
		}
	}
}

// nextLocked blocks until e's next op may start and pops it, or returns
// false when e has nothing more to do (failure, or Close with an empty
// queue). x.mu must be held; cond.Wait releases it while blocked.
func (x *Executor) nextLocked(e EngineID) (execOp, bool) {
	for {
		if x.err != nil {
			return execOp{}, false
		}
		q, h := x.queues[e], x.heads[e]
		if h == len(q) {
			if x.closing {
				return execOp{}, false
			}
			x.cond.Wait()
			continue
		}
		if !x.t.AllCompleted(&q[h].deps) {
			x.cond.Wait()
			continue
		}
		op := q[h]
		q[h] = execOp{} // drop the fn reference
		switch h++; {
		case h == len(q):
			x.queues[e], x.heads[e] = q[:0], 0
		case h >= compactAfter && 2*h >= len(q):
			// A queue that never drains would otherwise keep its whole
			// history: slide the pending tail to the front.
			n := copy(q, q[h:])
			clear(q[n:])
			x.queues[e], x.heads[e] = q[:n], 0
		default:
			x.heads[e] = h
		}
		return op, true
	}
}

// compactAfter is how many started ops a queue may hold in front of its
// head before nextLocked slides the pending ops down.
const compactAfter = 256

// callOp runs op.fn, turning a panic into an error wrapping ErrOpPanicked.
func callOp(ctx context.Context, op execOp) (err error) {
	if op.fn == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrOpPanicked, r)
		}
	}()
	return op.fn(ctx)
}
