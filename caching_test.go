package subarena_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

func overlaps(a, b *subarena.Buffer) bool {
	return a.Offset() < b.Offset()+b.Size() && b.Offset() < a.Offset()+a.Size()
}

func fill(mem []byte, v byte) {
	for i := range mem {
		mem[i] = v
	}
}

// TestCachingRecordStream ports PyTorch's record_stream pattern: a tensor
// allocated on stream A is written there, read on stream B (slowly: B's
// read is held on a channel), recorded on B and freed. A new allocation on
// A must not get its bytes while B's read is neither complete nor ordered
// before A; once A waits for B's read, the fenced policies may hand them
// over at once (A's next op runs after the read), the others only after it
// completes. B's read must see A's bytes whatever happens, and the race
// detector watches every byte.
func TestCachingRecordStream(t *testing.T) {
	for _, p := range subarena.SafePolicies() {
		t.Run(p.String(), func(t *testing.T) { recordStreamPattern(t, p) })
	}
}

// newCaching returns an Allocator of cfg and a Caching over it, both
// closed when the test ends.
func newCaching(t *testing.T, cfg subarena.Config) (*subarena.Allocator, *subarena.Caching) {
	t.Helper()
	a, err := subarena.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	c, err := subarena.NewCaching(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return a, c
}

func recordStreamPattern(t *testing.T, p subarena.Policy) {
	const size = 4096
	tl := sasync.NewTimeline()
	sa, _ := tl.AddEngine("stream-a", sasync.Compute)
	sb, _ := tl.AddEngine("stream-b", sasync.Compute)
	a, c := newCaching(t, subarena.Config{Capacity: 16 * size, Policy: p, Timeline: tl, Backing: make([]byte, 16*size)})
	check := func() {
		t.Helper()
		if err := c.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	x := sasync.NewExecutor(tl)
	x.Start(context.Background())
	defer x.Close()

	x1, err := c.Malloc(size, sa)
	if err != nil {
		t.Fatal(err)
	}
	check()
	m1 := x1.Bytes()
	write, _ := x.Submit(sa, nil, func(context.Context) error { fill(m1, 0xAA); return nil })
	gate := make(chan struct{})
	var readErr error
	read, _ := x.Submit(sb, []sasync.Event{write}, func(context.Context) error {
		<-gate
		for i, v := range m1 {
			if v != 0xAA {
				readErr = fmt.Errorf("stream B read byte %d = %#x: another owner's bytes", i, v)
				return readErr
			}
		}
		return nil
	})
	if err := c.RecordStream(x1, sb); err != nil {
		t.Fatal(err)
	}
	check()
	if err := c.Free(x1); err != nil {
		t.Fatal(err)
	}
	check()

	// B's read is pending and not ordered before A: the bytes stay B's.
	x2, err := c.Malloc(size, sa)
	if err != nil {
		t.Fatal(err)
	}
	check()
	if overlaps(x1, x2) {
		t.Fatalf("malloc on A got %v while stream B still reads %v", x2, x1)
	}
	m2 := x2.Bytes()
	x.Submit(sa, nil, func(context.Context) error { fill(m2, 0xBB); return nil })

	// Order A after B's read (still held): the fenced policies may now hand
	// the bytes to A's next op, which runs after the read.
	if _, err := x.Submit(sa, []sasync.Event{read}, nil); err != nil {
		t.Fatal(err)
	}
	x3, err := c.Malloc(size, sa)
	if err != nil {
		t.Fatal(err)
	}
	check()
	fenced := p == subarena.SubrangeFenced || p == subarena.WholeFenced
	if got := overlaps(x1, x3); got != fenced {
		t.Fatalf("%v: malloc on A ordered after B's read reused its bytes: %v, want %v", p, got, fenced)
	}
	m3 := x3.Bytes()
	x.Submit(sa, nil, func(context.Context) error { fill(m3, 0xCC); return nil })

	close(gate)
	last, _ := x.Submit(sa, nil, nil)
	if err := x.Wait(last); err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	for _, b := range []*subarena.Buffer{x2, x3} {
		if err := c.Free(b); err != nil {
			t.Fatal(err)
		}
		check()
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if n, d := c.Outstanding(); n != 0 || d != 0 {
		t.Fatalf("%d outstanding, %d deferred after everything completed", n, d)
	}
	if st := a.Stats(); st.Live != 0 || st.Held != 0 || st.Users != 0 {
		t.Fatalf("allocator not empty: %+v", st)
	}
}

// TestCachingWithoutRecordStream is the control: the same pattern without
// RecordStream lets a fenced Malloc on A take bytes stream B has not read
// yet — the premature reuse record_stream exists to prevent — so the test
// above can fail. Nothing is written to the reused bytes here.
func TestCachingWithoutRecordStream(t *testing.T) {
	tl := sasync.NewTimeline()
	sa, _ := tl.AddEngine("stream-a", sasync.Compute)
	sb, _ := tl.AddEngine("stream-b", sasync.Compute)
	_, c := newCaching(t, subarena.Config{Capacity: 1 << 16, Timeline: tl})
	x1, _ := c.Malloc(4096, sa)
	write, _ := tl.Submit(sa)
	tl.Submit(sb, write) // B reads x1, unrecorded
	if err := c.Free(x1); err != nil {
		t.Fatal(err)
	}
	x2, err := c.Malloc(4096, sa)
	if err != nil {
		t.Fatal(err)
	}
	if !overlaps(x1, x2) {
		t.Fatal("without record_stream the bytes were not reused: the allocator was told of B's use some other way")
	}
}

// TestCachingDeferredFree: a recorded engine whose queued work is not
// ordered after the buffer's previous owner (Use says ErrUnordered) keeps
// the whole buffer until that work completes; then it is released from the
// completing goroutine.
func TestCachingDeferredFree(t *testing.T) {
	tl := sasync.NewTimeline()
	sa, _ := tl.AddEngine("a", sasync.Compute)
	sb, _ := tl.AddEngine("b", sasync.Compute)
	sc, _ := tl.AddEngine("c", sasync.Copy)
	_, c := newCaching(t, subarena.Config{Capacity: 8192, Granule: 4096, Timeline: tl})

	// x0 is read on C and freed; A then waits for C's read, so a Malloc on
	// A takes x0's bytes fenced while C's read is still pending.
	x0, _ := c.Malloc(4096, sa)
	readC, _ := tl.Submit(sc)
	c.RecordStream(x0, sc)
	if err := c.Free(x0); err != nil {
		t.Fatal(err)
	}
	tl.Submit(sa, readC)
	x1, err := c.Malloc(4096, sa)
	if err != nil {
		t.Fatal(err)
	}
	if !overlaps(x0, x1) {
		t.Fatal("setup: the fenced bytes were not reused")
	}
	// B queues work unordered after C's read and records x1.
	opB, _ := tl.Submit(sb)
	if err := c.RecordStream(x1, sb); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(x1); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if n, d := c.Outstanding(); n != 0 || d != 1 {
		t.Fatalf("outstanding %d, deferred %d; want 0, 1", n, d)
	}
	// The arena's other 4096 bytes are free, x1's are still held.
	x2, err := c.Malloc(4096, sa)
	if err != nil {
		t.Fatal(err)
	}
	if overlaps(x1, x2) {
		t.Fatal("a deferred buffer's bytes were reused before B's work completed")
	}
	if _, err := c.Malloc(4096, sa); !errors.Is(err, subarena.ErrNoSpace) {
		t.Fatalf("third malloc in a two-block arena: %v", err)
	}
	if err := c.Free(x1); !errors.Is(err, subarena.ErrDoubleRelease) {
		t.Fatalf("free of a deferred buffer: %v", err)
	}
	if err := tl.Complete(opB); err != nil {
		t.Fatal(err)
	}
	if n, d := c.Outstanding(); n != 1 || d != 0 {
		t.Fatalf("after B completed: outstanding %d, deferred %d; want 1, 0", n, d)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	x3, err := c.Malloc(4096, sa)
	if err != nil {
		t.Fatalf("bytes of the deferred buffer did not come back: %v", err)
	}
	if !overlaps(x1, x3) {
		t.Fatal("the only free bytes were not x1's")
	}
}

// TestCachingBadInput: every misuse returns an error matching a sentinel
// and changes nothing.
func TestCachingBadInput(t *testing.T) {
	if _, err := subarena.NewCaching(nil); !errors.Is(err, subarena.ErrInvalidConfig) {
		t.Fatalf("nil allocator: %v", err)
	}
	tl := sasync.NewTimeline()
	sa, _ := tl.AddEngine("a", sasync.Compute)
	a, _ := subarena.New(subarena.Config{Capacity: 1 << 16, Timeline: tl})
	defer a.Close()
	other, _ := subarena.New(subarena.Config{Capacity: 1 << 16, Timeline: tl})
	defer other.Close()
	c, _ := subarena.NewCaching(a)
	defer c.Close()
	pt, _ := tl.Point(sa)
	direct, _ := a.Alloc(256, pt)
	foreign, _ := other.Alloc(256, pt)
	b, err := c.Malloc(1000, sa)
	if err != nil {
		t.Fatal(err)
	}
	before := a.Stats()
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"malloc size 0", second(c.Malloc(0, sa)), subarena.ErrInvalidSize},
		{"malloc negative", second(c.Malloc(-5, sa)), subarena.ErrInvalidSize},
		{"malloc unknown engine", second(c.Malloc(64, 9)), subarena.ErrUnknownEngine},
		{"malloc too big", second(c.Malloc(1<<20, sa)), subarena.ErrNoSpace},
		{"record unknown engine", c.RecordStream(b, 7), subarena.ErrUnknownEngine},
		{"record nil", c.RecordStream(nil, sa), subarena.ErrForeign},
		{"record foreign", c.RecordStream(foreign, sa), subarena.ErrForeign},
		{"record direct", c.RecordStream(direct, sa), subarena.ErrForeign},
		{"free nil", c.Free(nil), subarena.ErrForeign},
		{"free foreign", c.Free(foreign), subarena.ErrForeign},
		{"free direct", c.Free(direct), subarena.ErrForeign},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if after := a.Stats(); after.Live != before.Live || after.Buffers != before.Buffers || after.Users != before.Users {
		t.Fatalf("rejected calls changed the allocator: %+v -> %+v", before, after)
	}
	if n, _ := c.Outstanding(); n != 1 {
		t.Fatalf("%d outstanding, want 1", n)
	}
	claim, err := a.Claim(b.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Free(b); !errors.Is(err, subarena.ErrClaimed) {
		t.Fatalf("free of a claimed buffer: %v", err)
	}
	claim.Abandon()
	if err := c.Free(b); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(b); !errors.Is(err, subarena.ErrDoubleRelease) {
		t.Fatalf("double free: %v", err)
	}
	if err := c.RecordStream(b, sa); !errors.Is(err, subarena.ErrReleased) {
		t.Fatalf("record stream after free: %v", err)
	}
	b2, _ := c.Malloc(512, sa)
	if err := a.Release(b2); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckInvariants(); err == nil {
		t.Fatal("CheckInvariants accepts a buffer released behind the facade's back")
	}
	if err := c.Free(b2); !errors.Is(err, subarena.ErrReleased) {
		t.Fatalf("free of a buffer released behind the facade's back: %v", err)
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatalf("the refused Free let the facade drop the released buffer: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// freedRecord is the oracle's memory of one freed buffer: its bytes, and
// the ops that must complete or happen-before any allocation that reuses
// them.
type freedRecord struct {
	lo, hi int64
	guards []sasync.Event
}

// TestCachingAgainstOracle drives random Malloc, RecordStream, Free,
// submissions with random waits, host syncs and completions on three
// engines, under every safe policy, and checks each allocation against an
// oracle of the record_stream rule: bytes of a freed buffer go to a new
// Malloc on engine E only if every op queued since the buffer's Malloc on
// its engine and on its recorded engines has completed or happens-before
// E's point. Invariants are checked after every step; at the end every
// byte must come back.
func TestCachingAgainstOracle(t *testing.T) {
	steps := 500
	if testing.Short() {
		steps = 150
	}
	for _, p := range subarena.SafePolicies() {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprintf("%v/%d", p, seed), func(t *testing.T) { cachingOracleRun(t, p, seed, steps) })
		}
	}
}

// cachingEngines is the number of engines cachingOracleRun drives.
const cachingEngines = 3

func cachingOracleRun(t *testing.T, p subarena.Policy, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	tl := sasync.NewTimeline()
	const engines = cachingEngines
	for e := range engines {
		tl.AddEngine(fmt.Sprintf("s%d", e), sasync.Compute)
	}
	a, c := newCaching(t, subarena.Config{Capacity: 24 * 256, Policy: p, Timeline: tl})
	s := &cachingRun{t: t, rng: rng, tl: tl, c: c}
	for step := range steps {
		s.step = step
		var what string
		ok := true
		switch op := rng.IntN(10); {
		case op < 3:
			what = s.malloc()
		case op < 5:
			what, ok = s.recordStream()
		case op < 6:
			what, ok = s.free()
		case op < 8:
			what = s.submit()
		case op < 9:
			what, ok = s.complete()
		default:
			what, ok = s.hostSync()
		}
		if !ok {
			continue
		}
		if err := c.CheckInvariants(); err != nil {
			t.Fatalf("step %d after %s: %v", step, what, err)
		}
		s.forgetFreed()
	}
	for _, l := range s.bufs {
		if err := c.Free(l.b); err != nil {
			t.Fatal(err)
		}
	}
	for e := range engines {
		if sub := tl.Submitted(sasync.EngineID(e)); sub > 0 && !tl.Completed(sasync.Event{Engine: sasync.EngineID(e), Seq: sub}) {
			if err := tl.Complete(sasync.Event{Engine: sasync.EngineID(e), Seq: sub}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if n, d := c.Outstanding(); n != 0 || d != 0 {
		t.Fatalf("%d outstanding, %d deferred at the end", n, d)
	}
	if st := a.Stats(); st.Live != 0 || st.Held != 0 || st.Users != 0 || st.InUse != 0 {
		t.Fatalf("bytes did not come back: %+v", st)
	}
}

// cachingLive is a live buffer of cachingOracleRun: its engine, each
// engine's submissions at its Malloc, and the engines recorded for it.
type cachingLive struct {
	b       *subarena.Buffer
	engine  sasync.EngineID
	born    [cachingEngines]sasync.Seq
	streams [cachingEngines]bool
}

// cachingRun is one cachingOracleRun: the Caching allocator under test,
// its live buffers, and the freed ranges the oracle still guards.
type cachingRun struct {
	t     *testing.T
	rng   *rand.Rand
	tl    *sasync.Timeline
	c     *subarena.Caching
	bufs  []*cachingLive
	freed []freedRecord
	step  int
}

func (s *cachingRun) randEngine() sasync.EngineID {
	return sasync.EngineID(s.rng.IntN(cachingEngines))
}

// malloc allocates on a random engine and checks the bytes against the
// freed ranges' guards.
func (s *cachingRun) malloc() string {
	t, tl, step := s.t, s.tl, s.step
	e := s.randEngine()
	size := int64(1 + s.rng.IntN(3*256))
	pt, _ := tl.Point(e)
	b, err := s.c.Malloc(size, e)
	what := fmt.Sprintf("malloc %d on %d", size, e)
	if errors.Is(err, subarena.ErrNoSpace) {
		return what
	}
	if err != nil {
		t.Fatalf("step %d %s: %v", step, what, err)
	}
	completed := tl.CompletedClock()
	for _, f := range s.freed {
		if b.Offset() >= f.hi || f.lo >= b.Offset()+b.Size() {
			continue
		}
		for _, g := range f.guards {
			if !completed.Covers(g) && !pt.Clock.Covers(g) {
				t.Fatalf("step %d %s: got [%d, %d) overlapping freed [%d, %d) whose op %v neither completed nor happens-before the point",
					step, what, b.Offset(), b.Offset()+b.Size(), f.lo, f.hi, g)
			}
		}
	}
	l := &cachingLive{b: b, engine: e}
	for i := range cachingEngines {
		l.born[i] = tl.Submitted(sasync.EngineID(i))
	}
	s.bufs = append(s.bufs, l)
	return what
}

// recordStream records a live buffer on a random engine; false when none
// is live.
func (s *cachingRun) recordStream() (string, bool) {
	if len(s.bufs) == 0 {
		return "", false
	}
	l := s.bufs[s.rng.IntN(len(s.bufs))]
	e := s.randEngine()
	what := fmt.Sprintf("record %v on %d", l.b, e)
	if err := s.c.RecordStream(l.b, e); err != nil {
		s.t.Fatalf("step %d %s: %v", s.step, what, err)
	}
	l.streams[e] = true
	return what, true
}

// free frees a live buffer, guarding its bytes by the last op of its
// engine and of its recorded engines; false when none is live.
func (s *cachingRun) free() (string, bool) {
	t, step := s.t, s.step
	if len(s.bufs) == 0 {
		return "", false
	}
	i := s.rng.IntN(len(s.bufs))
	l := s.bufs[i]
	s.bufs = append(s.bufs[:i], s.bufs[i+1:]...)
	what := fmt.Sprintf("free %v", l.b)
	f := freedRecord{lo: l.b.Offset(), hi: l.b.Offset() + l.b.Size()}
	for e := range cachingEngines {
		if sasync.EngineID(e) != l.engine && !l.streams[e] {
			continue
		}
		if sub := s.tl.Submitted(sasync.EngineID(e)); sub > l.born[e] {
			f.guards = append(f.guards, sasync.Event{Engine: sasync.EngineID(e), Seq: sub})
		}
	}
	if err := s.c.Free(l.b); err != nil {
		t.Fatalf("step %d %s: %v", step, what, err)
	}
	if err := s.c.Free(l.b); !errors.Is(err, subarena.ErrDoubleRelease) {
		t.Fatalf("step %d double %s: %v", step, what, err)
	}
	s.freed = append(s.freed, f)
	return what, true
}

// submit submits an op, maybe waiting for another engine's op.
func (s *cachingRun) submit() string {
	tl, rng := s.tl, s.rng
	e := s.randEngine()
	var waits []sasync.Event
	if o := s.randEngine(); o != e && tl.Submitted(o) > 0 && rng.IntN(2) == 0 {
		waits = append(waits, sasync.Event{Engine: o, Seq: 1 + sasync.Seq(rng.IntN(int(tl.Submitted(o))))})
	}
	ev, err := tl.Submit(e, waits...)
	if err != nil {
		s.t.Fatal(err)
	}
	return fmt.Sprintf("submit %v waiting %v", ev, waits)
}

// complete completes a prefix of one engine; false when there is none to
// complete.
func (s *cachingRun) complete() (string, bool) {
	tl := s.tl
	e := s.randEngine()
	done := tl.CompletedClock()[e]
	sub := tl.Submitted(e)
	if done == sub {
		return "", false
	}
	ev := sasync.Event{Engine: e, Seq: done + 1 + sasync.Seq(s.rng.IntN(int(sub-done)))}
	if tl.Completed(ev) {
		return "", false // completed through another engine's op
	}
	what := fmt.Sprintf("complete %v", ev)
	if err := tl.Complete(ev); err != nil {
		s.t.Fatalf("step %d %s: %v", s.step, what, err)
	}
	return what, true
}

// hostSync has the host sync on some op; false when the engine has none.
func (s *cachingRun) hostSync() (string, bool) {
	tl := s.tl
	e := s.randEngine()
	if tl.Submitted(e) == 0 {
		return "", false
	}
	ev := sasync.Event{Engine: e, Seq: 1 + sasync.Seq(s.rng.IntN(int(tl.Submitted(e))))}
	tl.HostSync(ev)
	return fmt.Sprintf("host sync %v", ev), true
}

// forgetFreed forgets the freed records whose guards have all completed.
func (s *cachingRun) forgetFreed() {
	completed := s.tl.CompletedClock()
	kept := s.freed[:0]
	for _, f := range s.freed {
		for _, g := range f.guards {
			if !completed.Covers(g) {
				kept = append(kept, f)
				break
			}
		}
	}
	s.freed = kept
}

// A tensor allocated on stream A, read on stream B and recorded there: a
// Malloc on A cannot take its bytes until B's read completes or A waits
// for it.
func ExampleCaching() {
	tl := sasync.NewTimeline()
	streamA, _ := tl.AddEngine("stream-a", sasync.Compute)
	streamB, _ := tl.AddEngine("stream-b", sasync.Compute)
	a, _ := subarena.New(subarena.Config{Capacity: 1 << 16, Timeline: tl})
	c, _ := subarena.NewCaching(a)

	x, _ := c.Malloc(4096, streamA)
	produce, _ := tl.Submit(streamA)          // writes x
	consume, _ := tl.Submit(streamB, produce) // reads x on B
	_ = c.RecordStream(x, streamB)
	_ = c.Free(x)

	y, _ := c.Malloc(4096, streamA)
	fmt.Println("reused while B reads:", overlaps(x, y))

	tl.Submit(streamA, consume) // A now waits for B's read
	z, _ := c.Malloc(4096, streamA)
	fmt.Println("reused once A is ordered after B:", overlaps(x, z))
	// Output:
	// reused while B reads: false
	// reused once A is ordered after B: true
}

// BenchmarkCachingMallocFree measures one Malloc, one op on the stream and
// Free of a 4 KiB buffer through the facade, against the same work through
// the Allocator directly (Alloc, Use, Release) in the same run.
func BenchmarkCachingMallocFree(b *testing.B) {
	for _, facade := range []bool{true, false} {
		name := map[bool]string{true: "caching", false: "allocator"}[facade]
		b.Run(name, func(b *testing.B) {
			tl := sasync.NewTimeline()
			e, _ := tl.AddEngine("a", sasync.Compute)
			a, _ := subarena.New(subarena.Config{Capacity: 1 << 20, Timeline: tl})
			defer a.Close()
			c, _ := subarena.NewCaching(a)
			defer c.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var buf *subarena.Buffer
				var err error
				if facade {
					buf, err = c.Malloc(4096, e)
				} else {
					pt, _ := tl.Point(e)
					buf, err = a.Alloc(4096, pt)
				}
				if err != nil {
					b.Fatal(err)
				}
				ev, _ := tl.Submit(e)
				if facade {
					err = c.Free(buf)
				} else if err = a.UseBuffer(buf, ev, subarena.ReadWrite); err == nil {
					err = a.Release(buf)
				}
				if err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					tl.Complete(ev)
				}
			}
		})
	}
}

// TestReservationActivateOrdersLikeUse: Use refuses, with ErrUnordered, an
// op on bytes taken fenced that is not ordered after their previous owner's
// pending users; Activate of a reservation on the same bytes must refuse
// the very same op, or it could write while the previous owner's reader
// still runs. (Caching's deferred Free relies on Use's refusal.)
func TestReservationActivateOrdersLikeUse(t *testing.T) {
	tl := sasync.NewTimeline()
	ea, _ := tl.AddEngine("a", sasync.Compute)
	eb, _ := tl.AddEngine("b", sasync.Compute)
	ec, _ := tl.AddEngine("c", sasync.Copy)
	a, _ := subarena.New(subarena.Config{Capacity: 4096, Granule: 4096, Timeline: tl})
	defer a.Close()
	pt, _ := tl.Point(ea)
	b0, _ := a.Alloc(4096, pt)
	readC, _ := tl.Submit(ec) // the previous owner's reader, pending
	if err := a.UseBuffer(b0, readC, subarena.Read); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(b0); err != nil {
		t.Fatal(err)
	}
	tl.Submit(ea, readC) // A waits for it: b0's bytes are safe for A's point
	pt, _ = tl.Point(ea)
	b1, err := a.Alloc(4096, pt)
	if err != nil {
		t.Fatal(err)
	}
	opB, _ := tl.Submit(eb) // not ordered after readC
	if err := a.UseBuffer(b1, opB, subarena.Write); !errors.Is(err, subarena.ErrUnordered) {
		t.Fatalf("setup: Use by an unordered op: %v", err)
	}
	r, err := a.Reserve(b1.Whole())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Activate(opB, subarena.Write); !errors.Is(err, subarena.ErrUnordered) {
		t.Fatalf("Activate by the op Use refused: %v, want ErrUnordered", err)
	}
}

// TestCachingAfterAllocatorRelease: a buffer Malloc returned and the
// program then released through the Allocator directly is refused by
// RecordStream and Free (ErrReleased), and Free lets the facade drop it:
// the facade's invariants, which report the release behind its back, hold
// again after that Free.
func TestCachingAfterAllocatorRelease(t *testing.T) {
	tl := sasync.NewTimeline()
	e0, _ := tl.AddEngine("compute", sasync.Compute)
	e1, _ := tl.AddEngine("copy", sasync.Copy)
	a, err := subarena.New(subarena.Config{Capacity: 4096, Granule: 256, Timeline: tl})
	require.NoError(t, err)
	c, err := subarena.NewCaching(a)
	require.NoError(t, err)
	b, err := c.Malloc(1024, e0)
	require.NoError(t, err)
	require.NoError(t, a.Release(b))
	require.ErrorIs(t, c.CheckInvariants(), subarena.ErrReleased, "the facade sees the buffer released behind its back")
	require.ErrorIs(t, c.RecordStream(b, e1), subarena.ErrReleased)
	require.ErrorIs(t, c.Free(b), subarena.ErrReleased)
	n, deferred := c.Outstanding()
	require.Zero(t, n, "Free let the facade drop the record")
	require.Zero(t, deferred)
	require.ErrorIs(t, c.Free(b), subarena.ErrDoubleRelease)
	require.NoError(t, c.CheckInvariants())

	// A buffer partly discarded through the Allocator stays outstanding
	// until the program releases the rest; then Free drops it.
	b2, err := c.Malloc(1024, e0)
	require.NoError(t, err)
	half, err := b2.View(strided.Bytes(0, 512))
	require.NoError(t, err)
	require.NoError(t, a.Discard(half))
	require.ErrorIs(t, c.Free(b2), subarena.ErrReleased)
	require.ErrorIs(t, c.RecordStream(b2, e1), subarena.ErrReleased)
	n, _ = c.Outstanding()
	require.Equal(t, 1, n, "a refused Free of a held buffer changes nothing")
	require.NoError(t, a.Release(b2))
	require.ErrorIs(t, c.Free(b2), subarena.ErrReleased)
	n, _ = c.Outstanding()
	require.Zero(t, n)
	require.NoError(t, c.CheckInvariants())
	require.Zero(t, a.Stats().InUse)
}
