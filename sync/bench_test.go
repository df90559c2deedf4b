package sync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
)

// histories are the prior-event counts every history-sensitive benchmark
// runs at: the cost per op must not depend on them.
var histories = []int{1_000, 1_000_000}

// prefilled returns a 4-engine Timeline holding n submitted ops: op i runs
// on engine i%4 and every other op waits for the latest op of the next
// engine; every op but the last 64 is completed.
func prefilled(tb testing.TB, n int) *Timeline {
	tb.Helper()
	const engines = 4
	tl := newEngines(tb, engines)
	for i := 0; i < n; i++ {
		e := EngineID(i % engines)
		next := (e + 1) % engines
		var err error
		if i%2 == 0 && tl.hist[next].n > 0 {
			_, err = tl.Submit(e, Event{next, tl.hist[next].n})
		} else {
			_, err = tl.Submit(e)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	if n > 64 {
		done := n - 64
		if err := tl.Complete(Event{EngineID(done % engines), Seq(done/engines + 1)}); err != nil {
			tb.Fatal(err)
		}
	}
	return tl
}

// cpuClock measures the process CPU time a timed loop uses. On a shared
// machine wall time per op mostly measures how long the benchmark waited
// for a core; CPU time does not, so every benchmark reports both.
type cpuClock struct{ start time.Duration }

func startCPU(b *testing.B) cpuClock {
	b.ResetTimer()
	return cpuClock{start: testutil.ProcessCPU()}
}

// stop reports the CPU nanoseconds per op as "cpu-ns/op".
func (c cpuClock) stop(b *testing.B) {
	b.StopTimer()
	if used := testutil.ProcessCPU() - c.start; used > 0 && b.N > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// settle finishes the garbage collection the set-up started, so that it
// does not run concurrently with the timed loop.
func settle() { runtime.GC() }

func historyName(n int) string { return fmt.Sprintf("history=%.0e", float64(n)) }

// submitRing submits op i on engine i mod 4, waiting for the latest op
// of the next engine (last holds each engine's latest sequence number).
func submitRing(b *testing.B, tl *Timeline, last *[4]Seq, i int) Event {
	e := EngineID(i & 3)
	next := (e + 1) & 3
	ev, err := tl.Submit(e, Event{next, last[next]})
	if err != nil {
		b.Fatal(err)
	}
	last[e] = ev.Seq
	return ev
}

func BenchmarkSubmit(b *testing.B) {
	for _, n := range histories {
		b.Run(historyName(n), func(b *testing.B) {
			tl := prefilled(b, n)
			var last [4]Seq
			for e := range last {
				last[e] = tl.Submitted(EngineID(e))
			}
			settle()
			b.ReportAllocs()
			clk := startCPU(b)
			for i := 0; i < b.N; i++ {
				submitRing(b, tl, &last, i)
			}
			clk.stop(b)
		})
	}
}

// BenchmarkSubmitForget is the steady state of a long-running program: a
// two-engine pipeline whose ops complete as it goes and a Forget every 512
// submissions, so chunks are recycled and nothing is allocated.
func BenchmarkSubmitForget(b *testing.B) {
	tl := prefilled(b, 1_000_000)
	tl.Forget()
	last := [4]Seq{tl.Submitted(0), tl.Submitted(1), tl.Submitted(2), tl.Submitted(3)}
	settle()
	b.ReportAllocs()
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		ev := submitRing(b, tl, &last, i)
		if i&chunkMask == chunkMask {
			if err := tl.Complete(ev); err != nil {
				b.Fatal(err)
			}
			tl.Forget()
		}
	}
	clk.stop(b)
}

// eventPairs returns count random pairs of submitted events, spread over
// the whole history (so lookups of old clocks are measured, not only hot
// recent ones).
func eventPairs(tl *Timeline, count int) [][2]Event {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func() Event {
		e := EngineID(r.IntN(4))
		return Event{e, 1 + Seq(r.Uint64N(uint64(tl.hist[e].n)))}
	}
	pairs := make([][2]Event, count)
	for i := range pairs {
		pairs[i] = [2]Event{pick(), pick()}
	}
	return pairs
}

func BenchmarkHappensBefore(b *testing.B) {
	for _, n := range histories {
		tl := prefilled(b, n)
		// Check the answer once before timing: on one engine, order is
		// submission order.
		if hb, err := tl.HappensBefore(Event{0, 1}, Event{0, 2}); err != nil || !hb {
			b.Fatalf("HappensBefore(e0#1, e0#2) = %v, %v", hb, err)
		}
		if hb, err := tl.HappensBefore(Event{0, 2}, Event{0, 1}); err != nil || hb {
			b.Fatalf("HappensBefore(e0#2, e0#1) = %v, %v", hb, err)
		}
		pairs := eventPairs(tl, 1<<12)
		settle()
		b.Run(historyName(n)+"/random", func(b *testing.B) {
			b.ReportAllocs()
			clk := startCPU(b)
			hits := 0
			for i := 0; i < b.N; i++ {
				p := &pairs[i&(len(pairs)-1)]
				hb, err := tl.HappensBefore(p[0], p[1])
				if err != nil {
					b.Fatal(err)
				}
				if hb {
					hits++
				}
			}
			clk.stop(b)
			sinkInt = hits
		})
		b.Run(historyName(n)+"/recent", func(b *testing.B) {
			last := tl.Submitted(1)
			a, c := Event{0, tl.Submitted(0) - 3}, Event{1, last}
			b.ReportAllocs()
			clk := startCPU(b)
			for i := 0; i < b.N; i++ {
				if _, err := tl.HappensBefore(a, c); err != nil {
					b.Fatal(err)
				}
			}
			clk.stop(b)
		})
	}
}

var sinkInt int

func BenchmarkComplete(b *testing.B) {
	for _, n := range histories {
		for _, subscribed := range []bool{false, true} {
			name := historyName(n)
			if subscribed {
				name += "/subscribed"
			}
			b.Run(name, func(b *testing.B) {
				tl := prefilled(b, n)
				if subscribed {
					var seen Clock
					defer tl.Subscribe(func(c Clock) { seen.Join(&c) })()
				}
				// b.N fresh ops to complete, one per engine in turn, each
				// waiting on the previous one, so completing them in order
				// never hits an op already completed.
				prev := Event{3, tl.Submitted(3)}
				evs := make([]Event, b.N)
				for i := range evs {
					ev, err := tl.Submit(EngineID(i&3), prev)
					if err != nil {
						b.Fatal(err)
					}
					evs[i], prev = ev, ev
				}
				settle()
				b.ReportAllocs()
				clk := startCPU(b)
				for _, ev := range evs {
					if err := tl.Complete(ev); err != nil {
						b.Fatal(err)
					}
				}
				clk.stop(b)
			})
		}
	}
}

func BenchmarkPointSafeFor(b *testing.B) {
	for _, n := range histories {
		b.Run(historyName(n), func(b *testing.B) {
			tl := prefilled(b, n)
			var fence Clock
			fence.Observe(Event{1, tl.Submitted(1) / 2})
			p, err := tl.Point(0)
			if err != nil {
				b.Fatal(err)
			}
			if !tl.SafeFor(&fence, p) {
				b.Fatal("an old, completed fence is not safe")
			}
			settle()
			b.ReportAllocs()
			clk := startCPU(b)
			for i := 0; i < b.N; i++ {
				p, _ := tl.Point(EngineID(i & 3))
				if !tl.SafeFor(&fence, p) {
					b.Fatal("not safe")
				}
			}
			clk.stop(b)
		})
	}
}

// BenchmarkBaselineMutex is the floor every Timeline query stands on:
// one uncontended lock and unlock, in the same run.
func BenchmarkBaselineMutex(b *testing.B) {
	var mu sync.Mutex
	b.ReportAllocs()
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		mu.Lock()
		mu.Unlock() //nolint:staticcheck // empty critical section on purpose
	}
	clk.stop(b)
}

// BenchmarkExecutor measures one submitted, run and completed no-op per
// iteration on two engines, each op waiting for the other engine's
// previous one (a ping-pong: the worst case for goroutine hand-off).
func BenchmarkExecutor(b *testing.B) {
	tl := newEngines(b, 2)
	x := NewExecutor(tl)
	x.Start(context.Background())
	noop := func(context.Context) error { return nil }
	var prev []Event
	b.ReportAllocs()
	clk := startCPU(b)
	for i := 0; i < b.N; i++ {
		ev, err := x.Submit(EngineID(i&1), prev, noop)
		if err != nil {
			b.Fatal(err)
		}
		prev = append(prev[:0], ev)
		if i&1023 == 1023 {
			if err := x.Wait(ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	clk.stop(b)
	if err := x.Close(); err != nil {
		b.Fatal(err)
	}
}
