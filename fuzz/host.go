package fuzz

import (
	"errors"
	"slices"
	"unsafe"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// Notes on host steps in the interleaving log.
const (
	noteNoSpace       = "no space: the host waits for a completion"
	notePending       = "bytes still pending: the host waits for a completion"
	noteRejected      = "a use was rejected (ErrUnordered): the op does nothing"
	noteDonateRefused = "donation to an op not ordered after the bytes' fence refused (ErrUnordered): the output takes fresh bytes"
	noteLost          = "claim refused (ErrPending)"
	noteRetired       = "already retired: every byte was discarded or donated"
)

// hostStep runs the host's next step; a step that must wait (no space,
// bytes still pending) stays next and the host waits for a completion.
func (s *Sim) hostStep() {
	i := s.next
	st := &s.p.Steps[i]
	s.res.HostSteps++
	entry := logEntry{host: true, step: i, op: -1, retry: s.retrying}
	done := true
	s.noSpace = false
	switch st.Kind {
	case StepAlloc:
		done = s.alloc(st, &entry)
	case StepSubmit:
		s.submit(st, &entry)
	case StepRelease:
		s.release(st, &entry)
	case StepDiscard:
		if v := s.view(st.View); v != nil {
			if err := s.a.Discard(v); err != nil {
				s.fail(FailError, "discard v%d: %v", st.View, err)
			}
			s.kill(st.View)
		}
	case StepHostSync:
		if err := s.tl.HostSync(s.ops[st.Op].ev); err != nil {
			s.fail(FailError, "host sync on o%d: %v", st.Op, err)
		}
		s.ord.host.join(&s.ops[st.Op].clock)
	case StepDonate:
		done = s.donate(st, &entry)
	case StepClaim:
		s.claim(st, &entry)
	case StepReserve:
		if v := s.view(st.View); v != nil {
			r, err := s.a.Reserve(v)
			if err != nil {
				s.fail(FailError, "reserve v%d: %v", st.View, err)
				return
			}
			s.resv[st.Res] = r
			s.addPin(-1, st.Res, st.View)
		}
	case StepCancel:
		if err := s.resv[st.Res].Cancel(); err != nil {
			s.fail(FailError, "cancel r%d: %v", st.Res, err)
		}
		s.dropPins(-1, st.Res)
	}
	s.log = append(s.log, entry)
	s.retrying = false
	if done {
		s.next++
		return
	}
	s.waiting = true
	s.res.Waits++
}

// alloc performs an allocation and checks the buffer it gets: in bounds, on
// a granule, disjoint from every byte the program still holds, backed by
// the right memory — and, under a safe policy, that every pending user of
// its bytes happens-before the allocation's point (the reuse rule itself).
func (s *Sim) alloc(st *Step, entry *logEntry) bool {
	pt, err := s.tl.Point(s.eng[st.Engine])
	if err != nil {
		s.fail(FailError, "point of e%d: %v", st.Engine, err)
		return true
	}
	var opts subarena.AllocOptions
	if s.opt.MayWait {
		opts.MayWait = acceptAny
	}
	b, err := s.a.AllocWith(st.Size, pt, opts)
	if errors.Is(err, subarena.ErrNoSpace) {
		entry.note = noteNoSpace
		s.noSpace = true // also when a refused donation falls back to fresh bytes
		return false
	}
	if err != nil {
		s.fail(FailError, "alloc b%d: %v", st.Buf, err)
		return true
	}
	off, size := b.Offset(), b.Size()
	entry.val, entry.hasVal = off, true
	s.placed(off)
	if size != st.Size || off < 0 || off+size > s.p.Capacity || off%s.p.Granule != 0 {
		s.fail(FailOracle, "alloc b%d of %d bytes returned [%d, %d)", st.Buf, st.Size, off, off+size)
		return true
	}
	if owner, at := s.heldOverlap(off, off+size); owner >= 0 {
		s.fail(FailOracle, "alloc b%d at [%d, %d) overlaps byte %d that b%d still holds", st.Buf, off, off+size, at, owner)
		return true
	}
	sb := &s.bufs[st.Buf]
	*sb = simBuf{b: b, off: off, size: size, lastW: make([]int32, size), dead: make([]bool, size), held: true}
	if !s.captureMem(st.Buf) {
		return true
	}
	// The pins still pending on the bytes handed over make the fence the
	// buffer carries; under a safe policy each must happen-before the point.
	span := ranges.Granule(s.p.Granule).Up(size)
	var pc vclock
	for e := 0; e < s.p.Engines; e++ {
		pc[e] = uint32(pt.Clock[s.eng[e]])
	}
	for i := range s.pins {
		pn := &s.pins[i]
		if !pn.active || pn.hi <= off || pn.lo >= off+span || !pn.overlaps(off, off+span) {
			continue
		}
		if !s.pol.Safe() {
			continue
		}
		if pn.op < 0 {
			s.breach("alloc b%d at [%d, %d) took bytes reservation r%d still pins", st.Buf, off, off+size, pn.res)
			continue
		}
		e, seq := s.p.Ops[pn.op].Engine, s.ops[pn.op].clock[s.p.Ops[pn.op].Engine]
		sb.residue[e] = max(sb.residue[e], seq)
		if pc[e] >= seq {
			continue
		}
		if !s.opt.MayWait {
			s.breach("alloc b%d at [%d, %d) for a writer on e%d took bytes o%d (pending, not ordered before the point) still uses",
				st.Buf, off, off+size, st.Engine, pn.op)
			continue
		}
		sb.residueOps = append(sb.residueOps, pn.op)
	}
	if len(sb.residueOps) > 0 {
		s.res.WaitReuse++
		s.checkWaits(st.Buf)
	}
	return true
}

// acceptAny is the MayWait of RunOptions.MayWait: every event.
func acceptAny(sasync.Event) bool { return true }

// checkWaits checks that the Allocator's waits for buffer buf
// (Buffer.AppendWaits) cover every op it was handed over from while that
// op was not ordered before the alloc's point.
func (s *Sim) checkWaits(buf int) {
	sb := &s.bufs[buf]
	waits := sb.b.AppendWaits(nil)
	for _, op := range sb.residueOps {
		ev := s.ops[op].ev
		covered := false
		for _, w := range waits {
			covered = covered || (w.Engine == ev.Engine && w.Seq >= ev.Seq)
		}
		if !covered {
			s.breach("buffer b%d took bytes o%d still uses, but its waits %v do not cover %v", buf, op, waits, ev)
		}
	}
}

// placed folds an offset into the run's placement hash.
func (s *Sim) placed(off int64) {
	s.res.placements = (s.res.placements ^ uint64(off+1)) * 0x100000001b3
}

// captureMem takes the buffer's Bytes() and checks it is the arena's
// backing at the buffer's offset.
func (s *Sim) captureMem(buf int) bool {
	sb := &s.bufs[buf]
	mem := sb.b.Bytes()
	if int64(len(mem)) != sb.size || (sb.size > 0 && unsafe.SliceData(mem) != &s.mem[sb.off]) {
		s.fail(FailOracle, "b%d: Bytes() is not the backing [%d, %d)", buf, sb.off, sb.off+sb.size)
		return false
	}
	sb.mem = mem
	return true
}

// heldOverlap returns a held buffer with a live byte in [lo, hi), and that
// byte, or -1.
func (s *Sim) heldOverlap(lo, hi int64) (int, int64) {
	for b := range s.bufs {
		sb := &s.bufs[b]
		if !sb.held || sb.off >= hi || sb.off+sb.size <= lo {
			continue
		}
		for i := max(lo, sb.off); i < min(hi, sb.off+sb.size); i++ {
			if !sb.dead[i-sb.off] {
				return b, i
			}
		}
	}
	return -1, 0
}

// withResidueWaits returns the ops st waits for: its own waits and, with
// RunOptions.MayWait, the ops each buffer it uses was handed over from.
func (s *Sim) withResidueWaits(st *Step) []int {
	deps := st.Waits
	for _, u := range st.Uses {
		if ops := s.bufs[s.p.Views[u.View].Buf].residueOps; len(ops) > 0 {
			deps = append(slices.Clip(deps), ops...)
		}
	}
	return deps
}

// submit submits the op, registers each of its uses (Use, or Activate of a
// reservation), and checks each outcome against the model: a use is
// rejected with ErrUnordered exactly when its buffer came with a fence the
// op is not ordered after (a rejected reservation is then cancelled). Then
// it records what each read must see.
func (s *Sim) submit(st *Step, entry *logEntry) {
	deps := st.Waits
	if s.opt.MayWait && !s.skipResidueWaits {
		deps = s.withResidueWaits(st)
	}
	waits := make([]sasync.Event, len(deps))
	for i, w := range deps {
		waits[i] = s.ops[w].ev
	}
	ev, err := s.tl.Submit(s.eng[st.Engine], waits...)
	if err != nil {
		s.fail(FailError, "submit o%d: %v", st.Op, err)
		return
	}
	c := s.ord.submit(st.Engine, deps)
	o := &s.ops[st.Op]
	o.ev, o.clock, o.submitted = ev, c, true
	entry.op = st.Op
	if !s.sameClock(ev, &c) {
		return
	}
	for ui, u := range st.Uses {
		v := s.view(u.View)
		if v == nil {
			return
		}
		sb := &s.bufs[s.p.Views[u.View].Buf]
		unordered := !sb.residue.lessEq(&c)
		if u.Res >= 0 {
			err = s.resv[u.Res].Activate(ev, u.Access)
		} else {
			err = s.a.Use(v, ev, u.Access)
		}
		switch {
		case err == nil:
			if unordered {
				how := "Use"
				if u.Res >= 0 {
					how = "Activate of reservation r" + itoa(u.Res)
				}
				s.breach("%s accepted use %d of o%d on v%d(b%d), which is not ordered after the fence the buffer was handed over with (%v)",
					how, ui, st.Op, u.View, s.p.Views[u.View].Buf, fenceString(&sb.residue, s.p.Engines))
			}
			s.addPin(st.Op, -1, u.View)
			if u.Res >= 0 {
				s.dropPins(-1, u.Res)
			}
		case errors.Is(err, subarena.ErrUnordered):
			if !unordered {
				s.fail(FailOracle, "use %d of o%d on v%d was rejected although the op is ordered after the buffer's fence: %v", ui, st.Op, u.View, err)
				return
			}
			o.rejected = true
			entry.note = noteRejected
			if u.Res >= 0 {
				// The op will not run on the reserved bytes: give them up.
				if err := s.resv[u.Res].Cancel(); err != nil {
					s.fail(FailError, "cancel r%d after its activation was rejected: %v", u.Res, err)
					return
				}
				s.dropPins(-1, u.Res)
			}
		default:
			s.fail(FailError, "use %d of o%d on v%d: %v", ui, st.Op, u.View, err)
			return
		}
	}
	if o.rejected {
		s.res.Rejected++
		return
	}
	for ui, u := range st.Uses {
		if u.Access&subarena.Read == 0 {
			continue
		}
		vd := &s.p.Views[u.View]
		sb := &s.bufs[vd.Buf]
		rc := readCheck{use: ui, buf: vd.Buf, bytes: vd.Bytes, expect: make([]int32, len(vd.Bytes))}
		for j, i := range vd.Bytes {
			rc.expect[j] = sb.lastW[i]
		}
		o.reads = append(o.reads, rc)
	}
	for _, u := range st.Uses {
		if u.Access&subarena.Write == 0 {
			continue
		}
		vd := &s.p.Views[u.View]
		sb := &s.bufs[vd.Buf]
		o.writes = append(o.writes, writeSet{buf: vd.Buf, bytes: vd.Bytes})
		for _, i := range vd.Bytes {
			sb.lastW[i] = int32(st.Op + 1)
		}
	}
}

// sameClock checks the Timeline's clock of ev against the program's model.
func (s *Sim) sameClock(ev sasync.Event, c *vclock) bool {
	tc, err := s.tl.EventClock(ev)
	if err != nil {
		s.fail(FailError, "clock of %v: %v", ev, err)
		return false
	}
	for e := 0; e < s.p.Engines; e++ {
		if uint32(tc[s.eng[e]]) != c[e] {
			s.fail(FailOracle, "the Timeline's clock of %v is %v, the program's model says %v", ev, tc, fenceString(c, s.p.Engines))
			return false
		}
	}
	return true
}

func (s *Sim) release(st *Step, entry *logEntry) {
	sb := &s.bufs[st.Buf]
	if sb.b.Released() {
		for i, d := range sb.dead {
			if !d {
				s.fail(FailOracle, "b%d retired while the program still holds its byte %d", st.Buf, i)
				return
			}
		}
		sb.held = false
		entry.note = noteRetired
		return
	}
	if err := s.a.Release(sb.b); err != nil {
		s.fail(FailError, "release b%d: %v", st.Buf, err)
	}
	sb.held = false
}

// donate hands a view's bytes to the op's output. Whether it must wait
// (ErrPending) is checked against the model's pins: exactly when a pending
// user that is neither the op nor ordered before it covers one of the
// bytes.
func (s *Sim) donate(st *Step, entry *logEntry) bool {
	v := s.view(st.View)
	if v == nil {
		return true
	}
	vd := &s.p.Views[st.View]
	src := &s.bufs[vd.Buf]
	lo := src.off + int64(vd.Bytes[0])
	hi := lo + int64(len(vd.Bytes))
	blocker := s.pinnedBy(lo, hi, &s.ops[st.Op].clock)
	nb, err := s.a.Donate(v, s.ops[st.Op].ev)
	unordered := !src.residue.lessEq(&s.ops[st.Op].clock)
	switch {
	case errors.Is(err, subarena.ErrUnordered):
		if !unordered {
			s.fail(FailOracle, "donate v%d to o%d: ErrUnordered, but the op is ordered after the fence the buffer was handed over with: %v", st.View, st.Op, err)
			return true
		}
		// The op's uses were refused too (it does nothing); its output
		// still needs bytes for the ops after it: fresh ones.
		entry.note = noteDonateRefused
		return s.alloc(&Step{Kind: StepAlloc, Buf: st.Buf, Size: hi - lo, Engine: s.p.Ops[st.Op].Engine}, entry)
	case unordered && err == nil:
		s.breach("donate v%d to o%d accepted, which is not ordered after the fence the buffer was handed over with (%v)",
			st.View, st.Op, fenceString(&src.residue, s.p.Engines))
		return true
	case errors.Is(err, subarena.ErrPending):
		if blocker == "" {
			s.fail(FailOracle, "donate v%d to o%d: ErrPending, but every pending user of [%d, %d) is ordered before the op: %v", st.View, st.Op, lo, hi, err)
		}
		entry.note = notePending
		return false
	case err != nil:
		s.fail(FailError, "donate v%d to o%d: %v", st.View, st.Op, err)
		return true
	case blocker != "":
		s.fail(FailOracle, "donate v%d to o%d succeeded while %s still covers its bytes", st.View, st.Op, blocker)
		return true
	}
	if nb.Offset() != lo || nb.Size() != hi-lo {
		s.fail(FailOracle, "donate v%d returned [%d, %d), want [%d, %d)", st.View, nb.Offset(), nb.Offset()+nb.Size(), lo, hi)
		return true
	}
	entry.val, entry.hasVal = lo, true
	s.placed(lo)
	nbuf := &s.bufs[st.Buf]
	// The bytes keep the fence they were handed over with.
	*nbuf = simBuf{b: nb, off: lo, size: hi - lo, held: true, dead: make([]bool, hi-lo), residue: src.residue, residueOps: src.residueOps}
	nbuf.lastW = append([]int32(nil), src.lastW[vd.Bytes[0]:int(vd.Bytes[0])+len(vd.Bytes)]...)
	s.kill(st.View)
	s.captureMem(st.Buf)
	return true
}

// claim tries to claim a view for eviction: it must fail with ErrPending
// exactly when a pending user covers one of its bytes.
func (s *Sim) claim(st *Step, entry *logEntry) {
	v := s.view(st.View)
	if v == nil {
		return
	}
	blocker := s.viewPinnedBy(st.View, nil)
	c, err := s.a.Claim(v)
	switch {
	case errors.Is(err, subarena.ErrPending):
		if blocker == "" {
			s.fail(FailOracle, "claim v%d: ErrPending, but no pending user covers its bytes: %v", st.View, err)
		}
		entry.note = noteLost
		s.res.ClaimsLost++
		return
	case err != nil:
		s.fail(FailError, "claim v%d: %v", st.View, err)
		return
	case blocker != "":
		s.fail(FailOracle, "claim v%d succeeded while %s covers its bytes", st.View, blocker)
		_ = c.Abandon()
		return
	}
	if st.Commit {
		err = c.Commit()
		s.kill(st.View)
	} else {
		err = c.Abandon()
	}
	if err != nil {
		s.fail(FailError, "finish claim v%d: %v", st.View, err)
	}
}

// kill marks a view's bytes as no longer held by the program.
func (s *Sim) kill(v int) {
	vd := &s.p.Views[v]
	for _, i := range vd.Bytes {
		s.bufs[vd.Buf].dead[i] = true
	}
}

// view returns view v built through the Allocator's API, checking that its
// composed layout is the program's.
func (s *Sim) view(v int) *subarena.View {
	if s.views[v] != nil {
		return s.views[v]
	}
	vd := &s.p.Views[v]
	var parent *subarena.View
	if vd.Parent >= 0 {
		if parent = s.view(vd.Parent); parent == nil {
			return nil
		}
	}
	nv, err := vd.Op.apply(s.bufs[vd.Buf].b, parent)
	if err != nil {
		s.fail(FailError, "view %s: %v", s.p.Chain(v), err)
		return nil
	}
	if !nv.Layout().Equal(vd.Layout) {
		s.fail(FailOracle, "view %s: the Allocator composed %v, want %v", s.p.Chain(v), nv.Layout(), vd.Layout)
		return nil
	}
	s.views[v] = nv
	return nv
}
