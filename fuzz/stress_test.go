package fuzz

import (
	"context"
	"errors"
	"fmt"
	stdsync "sync"
	"sync/atomic"
	"testing"

	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// TestStressExecutor runs generated programs on eight goroutine engines (a
// sync.Executor): the ops themselves write their stamps into the real
// backing bytes and check the bytes they read, from the engine goroutines,
// while the host allocates, uses, releases, donates, claims and reserves.
// Programs follow each other on one Allocator without draining, so bytes
// released by one are reused by the next while its ops are still queued.
// Under -race the detector also checks that every reuse is synchronized.
func TestStressExecutor(t *testing.T) {
	// 10^5 ops in all, the default policy taking the largest share.
	ops := map[subarena.Policy]int{
		subarena.SubrangeFenced: 40_000, subarena.SubrangeAfterUsers: 20_000,
		subarena.WholeFenced: 20_000, subarena.WholeAfterUsers: 20_000,
	}
	// A pool of programs, run one after another in a cycle: each run meets
	// a different arena and timeline, and generating is not what is tested.
	pool := make([]*Program, 24)
	for i := range pool {
		pool[i] = Generate(NewRand(uint64(i+1)), StressConfig())
	}
	for _, pol := range subarena.SafePolicies() {
		n := ops[pol]
		if testing.Short() {
			n /= 10
		}
		t.Run(pol.String(), func(t *testing.T) {
			st := newStress(t, pol)
			for i := 0; st.ops < n; i++ {
				if err := st.run(pool[i%len(pool)]); err != nil {
					t.Fatalf("program seed %d (run %d): %v", i%len(pool)+1, i, err)
				}
			}
			st.close()
			t.Logf("%d ops in %d programs, %d bytes checked, %d host waits, %d programs abandoned for fragmentation",
				st.ops, st.programs, st.reads.Load(), st.waits, st.abandoned)
		})
	}
}

// stress is the host of the stress test.
type stress struct {
	t     *testing.T
	tl    *sasync.Timeline
	a     *subarena.Allocator
	x     *sasync.Executor
	eng   []sasync.EngineID
	mem   []byte
	stamp []int32 // per arena byte: global op+1 of its last writer, written by the ops

	mu      stdsync.Mutex
	failure error
	reads   atomic.Int64 // bytes the ops have read and checked

	ops, programs, waits, abandoned int
}

func newStress(t *testing.T, pol subarena.Policy) *stress {
	cfg := StressConfig()
	st := &stress{t: t, tl: sasync.NewTimeline(), mem: make([]byte, cfg.Capacity), stamp: make([]int32, cfg.Capacity)}
	for e := 0; e < cfg.MaxEngines; e++ {
		id, err := st.tl.AddEngine(fmt.Sprintf("e%d", e), sasync.Compute)
		if err != nil {
			t.Fatal(err)
		}
		st.eng = append(st.eng, id)
	}
	a, err := subarena.New(subarena.Config{Capacity: cfg.Capacity, Granule: cfg.Granules[0], Policy: pol, Backing: st.mem, Timeline: st.tl})
	if err != nil {
		t.Fatal(err)
	}
	st.a = a
	st.x = sasync.NewExecutor(st.tl)
	st.x.Start(context.Background())
	return st
}

func (st *stress) opFailed(err error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failure == nil {
		st.failure = err
	}
	return err
}

// stressBuf is a buffer of the current program.
type stressBuf struct {
	b       *subarena.Buffer
	off     int64
	mem     []byte
	lastW   []int32 // global op+1
	allocEv sasync.Event
	views   map[int]*subarena.View
}

// run executes one program on the Executor.
func (st *stress) run(p *Program) error {
	bufs := make([]stressBuf, len(p.Bufs))
	evs := make([]sasync.Event, len(p.Ops))
	resv := make([]*subarena.Reservation, p.Reservations)
	base := int32(st.ops)
	var view func(v int) (*subarena.View, error)
	view = func(v int) (*subarena.View, error) {
		vd := &p.Views[v]
		sb := &bufs[vd.Buf]
		if w, ok := sb.views[v]; ok {
			return w, nil
		}
		var parent *subarena.View
		if vd.Parent >= 0 {
			var err error
			if parent, err = view(vd.Parent); err != nil {
				return nil, err
			}
		}
		w, err := vd.Op.apply(sb.b, parent)
		if err != nil {
			return nil, err
		}
		sb.views[v] = w
		return w, nil
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		var err error
		switch s.Kind {
		case StepAlloc:
			var ok bool
			if ok, err = st.alloc(s, &bufs[s.Buf]); err == nil && !ok {
				st.abandon(p, bufs, resv, i)
				return nil
			}
		case StepSubmit:
			err = st.submit(p, s, bufs, evs, resv, base, view)
		case StepRelease:
			if sb := &bufs[s.Buf]; !sb.b.Released() {
				err = st.a.Release(sb.b)
			}
		case StepDiscard:
			var v *subarena.View
			if v, err = view(s.View); err == nil {
				err = st.a.Discard(v)
			}
		case StepHostSync:
			err = st.x.Wait(evs[s.Op])
		case StepDonate:
			err = st.donate(p, s, bufs, evs, view)
		case StepClaim:
			var v *subarena.View
			if v, err = view(s.View); err == nil {
				c, cerr := st.a.Claim(v)
				switch {
				case errors.Is(cerr, subarena.ErrPending):
				case cerr != nil:
					err = cerr
				case s.Commit:
					err = c.Commit()
				default:
					err = c.Abandon()
				}
			}
		case StepReserve:
			var v *subarena.View
			if v, err = view(s.View); err == nil {
				resv[s.Res], err = st.a.Reserve(v)
			}
		case StepCancel:
			err = resv[s.Res].Cancel()
		}
		if err != nil {
			return st.explain(fmt.Errorf("step %d (%s): %w", i, p.StepString(i), err))
		}
	}
	st.ops += len(p.Ops)
	st.programs++
	if err := st.a.CheckInvariants(); err != nil {
		return err
	}
	if st.programs%64 == 0 { // the Timeline's check walks its whole history
		return st.tl.CheckInvariants()
	}
	return nil
}

// explain prefers an op's own failure (a wrong read) to the error the host
// saw because of it.
func (st *stress) explain(err error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failure != nil {
		return st.failure
	}
	return err
}

// alloc allocates, waiting for completions while there is no space; false
// means nothing pending can free enough (fragmentation).
func (st *stress) alloc(s *Step, sb *stressBuf) (bool, error) {
	e := st.eng[s.Engine]
	for {
		pt, err := st.tl.Point(e)
		if err != nil {
			return false, err
		}
		b, err := st.a.Alloc(s.Size, pt)
		if err == nil {
			*sb = stressBuf{b: b, off: b.Offset(), mem: b.Bytes(), lastW: make([]int32, s.Size), views: map[int]*subarena.View{}}
			if seq := st.tl.Submitted(e); seq > 0 {
				sb.allocEv = sasync.Event{Engine: e, Seq: seq}
			}
			return true, nil
		}
		var ns *subarena.NoSpaceError
		if !errors.As(err, &ns) {
			return false, err
		}
		st.waits++
		if ns.HasWait && ns.Wait.Seq == 0 {
			return false, fmt.Errorf("NoSpaceError says HasWait but names no event: %w", err)
		}
		if ns.HasWait {
			if err := st.x.Wait(ns.Wait); err != nil {
				return false, err
			}
			continue
		}
		if !st.drain() {
			return false, nil
		}
	}
}

// drain waits for every submitted op; it reports whether there was any.
func (st *stress) drain() bool {
	any := false
	for _, e := range st.eng {
		if seq := st.tl.Submitted(e); seq > 0 {
			ev := sasync.Event{Engine: e, Seq: seq}
			if !st.tl.Completed(ev) {
				any = true
			}
			_ = st.x.Wait(ev)
		}
	}
	return any
}

// abandon gives up the rest of a program the arena cannot fit: it drops
// what the program holds.
func (st *stress) abandon(p *Program, bufs []stressBuf, resv []*subarena.Reservation, at int) {
	st.abandoned++
	for _, r := range resv {
		if r != nil {
			_ = r.Cancel() // ErrFinished for those already used
		}
	}
	for i := range bufs {
		if b := bufs[i].b; b != nil && !b.Released() {
			_ = st.a.Release(b)
		}
	}
	for _, s := range p.Steps[:at] {
		if s.Kind == StepSubmit {
			st.ops++
		}
	}
}

// submit submits an op whose function reads and checks, then writes, real
// bytes, and registers its uses. Each use's buffer allocation point is
// added to the waits, as a host must when it uses a buffer on another
// engine than the one it was allocated for.
func (st *stress) submit(p *Program, s *Step, bufs []stressBuf, evs []sasync.Event, resv []*subarena.Reservation, base int32, view func(int) (*subarena.View, error)) error {
	var waits []sasync.Event
	for _, w := range s.Waits {
		waits = append(waits, evs[w])
	}
	for _, u := range s.Uses {
		if ev := bufs[p.Views[u.View].Buf].allocEv; ev.Seq > 0 {
			waits = append(waits, ev)
		}
	}
	me := base + int32(s.Op) // global op number
	type span struct {
		mem    []byte
		off    int64
		bytes  []int32
		expect []int32
	}
	var reads, writes []span
	for _, u := range s.Uses {
		vd := &p.Views[u.View]
		sb := &bufs[vd.Buf]
		if u.Access&subarena.Read != 0 {
			exp := make([]int32, len(vd.Bytes))
			for j, i := range vd.Bytes {
				exp[j] = sb.lastW[i]
			}
			reads = append(reads, span{mem: sb.mem, off: sb.off, bytes: vd.Bytes, expect: exp})
		}
	}
	for _, u := range s.Uses {
		vd := &p.Views[u.View]
		sb := &bufs[vd.Buf]
		if u.Access&subarena.Write != 0 {
			writes = append(writes, span{mem: sb.mem, off: sb.off, bytes: vd.Bytes})
			for _, i := range vd.Bytes {
				sb.lastW[i] = me + 1
			}
		}
	}
	step := p.Ops[s.Op].Step
	fn := func(context.Context) error {
		n := 0
		for _, r := range reads {
			for j, i := range r.bytes {
				want := r.expect[j]
				if want == 0 {
					continue
				}
				n++
				addr := r.off + int64(i)
				if got := st.stamp[addr]; got != want || r.mem[i] != stampByte(want-1, addr) {
					return st.opFailed(fmt.Errorf("wrong read: op %d (%s) read arena byte %d: want the write of op %d, found op %d's (byte %#02x)",
						me, p.StepString(step), addr, want-1, got-1, r.mem[i]))
				}
			}
		}
		for _, w := range writes {
			for _, i := range w.bytes {
				addr := w.off + int64(i)
				st.stamp[addr] = me + 1
				w.mem[i] = stampByte(me, addr)
			}
		}
		st.reads.Add(int64(n))
		return nil
	}
	ev, err := st.x.Submit(st.eng[s.Engine], waits, fn)
	if err != nil {
		return err
	}
	evs[s.Op] = ev
	for _, u := range s.Uses {
		v, err := view(u.View)
		if err != nil {
			return err
		}
		if u.Res >= 0 {
			err = resv[u.Res].Activate(ev, u.Access)
		} else {
			err = st.a.Use(v, ev, u.Access)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// donate donates a view to its op, waiting for the op (and so for every
// earlier user of the bytes) when they are still pending.
func (st *stress) donate(p *Program, s *Step, bufs []stressBuf, evs []sasync.Event, view func(int) (*subarena.View, error)) error {
	v, err := view(s.View)
	if err != nil {
		return err
	}
	for {
		nb, err := st.a.Donate(v, evs[s.Op])
		if errors.Is(err, subarena.ErrPending) {
			st.waits++
			if err := st.x.Wait(evs[s.Op]); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		vd := &p.Views[s.View]
		src := &bufs[vd.Buf]
		lo := int(vd.Bytes[0])
		bufs[s.Buf] = stressBuf{b: nb, off: nb.Offset(), mem: nb.Bytes(), views: map[int]*subarena.View{},
			lastW: append([]int32(nil), src.lastW[lo:lo+len(vd.Bytes)]...)}
		return nil
	}
}

func (st *stress) close() {
	if err := st.x.Close(); err != nil {
		st.t.Fatal(st.explain(err))
	}
	if err := st.a.CheckInvariants(); err != nil {
		st.t.Fatal(err)
	}
	if err := st.tl.CheckInvariants(); err != nil {
		st.t.Fatal(err)
	}
	if s := st.a.Stats(); s.Buffers != 0 || s.Users != 0 || s.Held != 0 || s.Free != s.Capacity {
		st.t.Fatalf("after all work: %d buffers, %d users, %d held, %d of %d free", s.Buffers, s.Users, s.Held, s.Free, s.Capacity)
	}
	st.a.Close()
}
