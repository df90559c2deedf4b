package sync

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
)

// noLeaks fails the test if goroutines started during it are still
// running shortly after it ends.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Fatalf("goroutine leak: %d running, %d before\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// opRecord is what one op observed about its own run.
type opRecord struct {
	ev    Event   // set by the submitter after Submit returns
	waits []Event // as submitted
	start atomic.Int64
	end   atomic.Int64
	ran   atomic.Int32
}

// TestExecutorOrder runs many ops on 4 and 8 engines, submitted and waited
// for by several host goroutines at once, and checks from real start/end
// stamps that every op started after its engine's previous op and every
// wait had ended.
func TestExecutorOrder(t *testing.T) {
	for _, engines := range []int{4, 8} {
		t.Run(string(rune('0'+engines))+" engines", func(t *testing.T) {
			noLeaks(t)
			runOrderTest(t, engines)
		})
	}
}

func runOrderTest(t *testing.T, engines int) {
	const submitters = 4
	opsPer := 600
	if testing.Short() {
		opsPer = 150
	}
	tl := newEngines(t, engines)
	x := NewExecutor(tl)

	var notifications atomic.Int64
	var subErr atomic.Value
	unsubscribe := tl.Subscribe(func(c Clock) {
		notifications.Add(1)
		if now := tl.CompletedClock(); !c.LessEq(&now) {
			subErr.Store("notified clock ahead of the completed clock")
		}
	})
	defer unsubscribe()
	var lateNotes atomic.Int64
	unsubscribeLate := tl.Subscribe(func(Clock) { lateNotes.Add(1) })

	records := make([]*opRecord, submitters*opsPer)
	var stamp atomic.Int64
	var violations atomic.Int64

	// Events submitted so far, shared by the submitters to pick waits.
	var poolMu sync.Mutex
	var pool []Event

	x.Start(context.Background())
	var wg sync.WaitGroup
	for g := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), uint64(engines)))
			for i := range opsPer {
				rec := &opRecord{}
				records[g*opsPer+i] = rec
				poolMu.Lock()
				for range r.IntN(3) {
					if len(pool) > 0 {
						rec.waits = append(rec.waits, pool[len(pool)-1-r.IntN(min(len(pool), 64))])
					}
				}
				poolMu.Unlock()
				work := r.IntN(50)
				ev, err := x.Submit(EngineID(r.IntN(engines)), rec.waits, func(ctx context.Context) error {
					rec.start.Store(stamp.Add(1))
					rec.ran.Add(1)
					for _, w := range rec.waits {
						if !tl.Completed(w) {
							violations.Add(1)
						}
					}
					for range work {
						runtime.Gosched()
					}
					rec.end.Store(stamp.Add(1))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				rec.ev = ev
				poolMu.Lock()
				pool = append(pool, ev)
				poolMu.Unlock()
				if r.IntN(40) == 0 {
					if err := x.Wait(ev); err != nil {
						t.Error(err)
						return
					}
					if rec.end.Load() == 0 || !tl.Completed(ev) {
						t.Errorf("Wait(%v) returned before the op finished", ev)
					}
					// The host sync orders every later submission after ev.
					after, err := x.Submit(EngineID(r.IntN(engines)), nil, nil)
					if err != nil {
						t.Error(err)
						return
					}
					if hb, _ := tl.HappensBefore(ev, after); !hb {
						t.Errorf("%v submitted after Wait(%v) does not happen-after it", after, ev)
					}
				}
				if i == opsPer/2 && g == 0 {
					unsubscribeLate()
				}
			}
		}()
	}
	wg.Wait()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	if v := violations.Load(); v != 0 {
		t.Fatalf("%d ops ran before a wait had completed", v)
	}
	if s := subErr.Load(); s != nil {
		t.Fatal(s)
	}
	byEvent := make(map[Event]*opRecord, len(records))
	for _, rec := range records {
		byEvent[rec.ev] = rec
	}
	for _, rec := range records {
		if rec.ran.Load() != 1 {
			t.Fatalf("%v ran %d times", rec.ev, rec.ran.Load())
		}
		start := rec.start.Load()
		if prev, ok := byEvent[Event{rec.ev.Engine, rec.ev.Seq - 1}]; ok && prev.end.Load() >= start {
			t.Fatalf("%v started at %d before its engine's previous op ended at %d", rec.ev, start, prev.end.Load())
		}
		for _, w := range rec.waits {
			if dep := byEvent[w]; dep.end.Load() >= start {
				t.Fatalf("%v started at %d before its wait %v ended at %d", rec.ev, start, w, dep.end.Load())
			}
		}
	}
	var total Seq
	for e := range engines {
		total += tl.Submitted(EngineID(e))
	}
	done := tl.CompletedClock()
	for e := range engines {
		if done[e] != tl.Submitted(EngineID(e)) {
			t.Fatalf("engine %d completed %d of %d ops after Close", e, done[e], tl.Submitted(EngineID(e)))
		}
	}
	if n := notifications.Load(); n != int64(total) {
		t.Fatalf("%d notifications for %d completions", n, total)
	}
	if n := lateNotes.Load(); n == 0 || n >= int64(total) {
		t.Fatalf("unsubscribed midway but saw %d of %d notifications", n, total)
	}
	testutil.Invariants(t, tl)
}

func TestExecutorFailure(t *testing.T) {
	noLeaks(t)
	tl := newEngines(t, 2)
	x := NewExecutor(tl)
	boom := errors.New("boom")
	release := make(chan struct{})
	var ranAfter atomic.Int32
	a, _ := x.Submit(0, nil, func(context.Context) error { <-release; return nil })
	b, _ := x.Submit(0, nil, func(context.Context) error { return boom })
	c, _ := x.Submit(0, nil, func(context.Context) error { ranAfter.Add(1); return nil })
	var canceled atomic.Bool
	blocked, _ := x.Submit(1, nil, func(ctx context.Context) error {
		close(release)
		<-ctx.Done() // a failure elsewhere cancels running ops
		canceled.Store(true)
		return nil
	})
	d, _ := x.Submit(1, []Event{c}, func(context.Context) error { ranAfter.Add(1); return nil })
	x.Start(context.Background())
	for _, ev := range []Event{c, d} {
		if err := x.Wait(ev); !errors.Is(err, boom) || !errors.Is(err, ErrStopped) {
			t.Fatalf("Wait(%v) = %v, want boom wrapped in ErrStopped", ev, err)
		}
	}
	// The op on engine 1 sees its context cancelled and returns; its
	// completion lands when it does. Let it land before the snapshot, so
	// that the comparison sees only what Submit does.
	for deadline := time.Now().Add(10 * time.Second); !(canceled.Load() && tl.Completed(blocked)) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	before := snapshot(tl)
	if _, err := x.Submit(1, nil, nil); !errors.Is(err, ErrStopped) || !errors.Is(err, boom) {
		t.Fatalf("Submit after failure = %v", err)
	}
	requireSameState(t, before, snapshot(tl), "Submit after failure")
	if err := x.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want boom", err)
	}
	if n := ranAfter.Load(); n != 0 {
		t.Fatalf("%d ops ran after the failure", n)
	}
	if !tl.Completed(a) || tl.Completed(b) || tl.Completed(c) {
		t.Fatalf("completed clock %v: want %v done, %v and %v pending", tl.CompletedClock(), a, b, c)
	}
	if !canceled.Load() {
		t.Fatalf("op %v did not see its context cancelled", blocked)
	}
	testutil.Invariants(t, tl)
}

func TestExecutorPanic(t *testing.T) {
	noLeaks(t)
	tl := newEngines(t, 1)
	x := NewExecutor(tl)
	x.Start(context.Background())
	ev, _ := x.Submit(0, nil, func(context.Context) error { panic("kernel fault") })
	if err := x.Wait(ev); !errors.Is(err, ErrOpPanicked) || !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait = %v, want ErrOpPanicked", err)
	}
	if err := x.Close(); !errors.Is(err, ErrOpPanicked) {
		t.Fatalf("Close = %v", err)
	}
}

func TestExecutorContextCancel(t *testing.T) {
	noLeaks(t)
	tl := newEngines(t, 2)
	x := NewExecutor(tl)
	ctx, cancel := context.WithCancel(context.Background())
	x.Start(ctx)
	started := make(chan struct{})
	a, _ := x.Submit(0, nil, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	b, _ := x.Submit(1, []Event{a}, nil)
	<-started
	cancel()
	if err := x.Wait(b); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if err := x.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v", err)
	}
	if tl.Completed(a) || tl.Completed(b) {
		t.Fatal("cancelled ops completed")
	}
}

func TestExecutorLifecycle(t *testing.T) {
	t.Run("close drains queued work", func(t *testing.T) {
		noLeaks(t)
		tl := newEngines(t, 3)
		x := NewExecutor(tl)
		var ran atomic.Int32
		var last Event
		for i := range 100 {
			last, _ = x.Submit(EngineID(i%3), []Event{{EngineID((i + 1) % 3), 1}}[:min(i/3, 1)], func(context.Context) error {
				ran.Add(1)
				return nil
			})
		}
		x.Start(context.Background())
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if ran.Load() != 100 || !tl.Completed(last) {
			t.Fatalf("ran %d of 100 ops", ran.Load())
		}
		if err := x.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if err := x.Wait(last); err != nil {
			t.Fatalf("Wait on a completed op after Close = %v", err)
		}
	})
	t.Run("close before start", func(t *testing.T) {
		noLeaks(t)
		tl := newEngines(t, 1)
		x := NewExecutor(tl)
		ev, _ := x.Submit(0, nil, func(context.Context) error { t.Error("ran"); return nil })
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		x.Start(context.Background()) // does nothing
		if err := x.Wait(ev); !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait = %v, want ErrClosed", err)
		}
		before := snapshot(tl)
		if _, err := x.Submit(0, nil, nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Submit after Close = %v", err)
		}
		requireSameState(t, before, snapshot(tl), "Submit after Close")
	})
	t.Run("bad submissions", func(t *testing.T) {
		noLeaks(t)
		tl := newEngines(t, 1)
		x := NewExecutor(tl)
		x.Start(context.Background())
		late, _ := tl.AddEngine("late", Copy)
		before := snapshot(tl)
		if _, err := x.Submit(late, nil, nil); !errors.Is(err, ErrUnknownEngine) {
			t.Fatalf("Submit to an engine added after Start = %v", err)
		}
		if _, err := x.Submit(0, []Event{{0, 5}}, nil); !errors.Is(err, ErrUnknownEvent) {
			t.Fatalf("Submit waiting on a future event = %v", err)
		}
		if err := x.Wait(Event{0, 1}); !errors.Is(err, ErrUnknownEvent) {
			t.Fatalf("Wait on a never-submitted event = %v", err)
		}
		requireSameState(t, before, snapshot(tl), "bad submissions")
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("waits on events completed outside the executor", func(t *testing.T) {
		noLeaks(t)
		tl := newEngines(t, 2)
		x := NewExecutor(tl)
		x.Start(context.Background())
		external := mustSubmit(t, tl, 1) // engine 1's op is driven by hand
		ev, _ := x.Submit(0, []Event{external}, nil)
		time.Sleep(10 * time.Millisecond)
		if tl.Completed(ev) {
			t.Fatal("ran before its wait completed")
		}
		go func() { _ = tl.Complete(external) }()
		if err := x.Wait(ev); err != nil {
			t.Fatal(err)
		}
		p, _ := tl.Point(1)
		if !tl.HappensBeforePoint(ev, p) {
			t.Fatalf("Wait(%v) did not host-sync: point %v", ev, p.Clock)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestConcurrentTimeline hammers a bare Timeline from many goroutines:
// submitters, completers racing to complete the same events, host syncs,
// subscribers joining and leaving, and invariant checks.
func TestConcurrentTimeline(t *testing.T) {
	tl := newEngines(t, 6)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var completes atomic.Int64
	var notes atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				e := EngineID(r.IntN(6))
				switch r.IntN(6) {
				case 0, 1:
					var waits []Event
					if f := EngineID(r.IntN(6)); tl.Submitted(f) > 0 {
						waits = append(waits, Event{f, 1 + Seq(r.Uint64N(uint64(tl.Submitted(f))))})
					}
					if _, err := tl.Submit(e, waits...); err != nil {
						t.Error(err)
						return
					}
				case 2, 3:
					if n := tl.Submitted(e); n > 0 {
						err := tl.Complete(Event{e, 1 + Seq(r.Uint64N(uint64(n)))})
						if err == nil {
							completes.Add(1)
						} else if !errors.Is(err, ErrAlreadyCompleted) {
							t.Error(err)
							return
						}
					}
				case 4:
					if n := tl.Submitted(e); n > 0 {
						if err := tl.HostSync(Event{e, n}); err != nil {
							t.Error(err)
							return
						}
					}
				default:
					unsub := tl.Subscribe(func(Clock) { notes.Add(1) })
					if i%50 == 0 {
						if err := tl.CheckInvariants(); err != nil {
							t.Error(err)
							return
						}
					}
					unsub()
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	testutil.Invariants(t, tl)
	if completes.Load() == 0 {
		t.Fatal("no completion succeeded")
	}
}

func TestExecutorWaitOnForgotten(t *testing.T) {
	noLeaks(t)
	x := NewExecutor(nil)
	tl := x.Timeline()
	if _, err := tl.AddEngine("compute", Compute); err != nil {
		t.Fatal(err)
	}
	x.Start(context.Background())
	first, _ := x.Submit(0, nil, nil)
	last, _ := x.Submit(0, nil, nil)
	if err := x.Wait(last); err != nil {
		t.Fatal(err)
	}
	tl.Forget()
	if tl.Forgotten(0) < first.Seq {
		t.Fatalf("Forgotten(0) = %d, want >= %d", tl.Forgotten(0), first.Seq)
	}
	if err := x.Wait(first); err != nil {
		t.Fatalf("Wait on a forgotten, completed op = %v", err)
	}
	if _, err := x.Submit(0, []Event{first}, nil); err != nil {
		t.Fatalf("Submit waiting on a forgotten op = %v", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Invariants(t, tl)
}
