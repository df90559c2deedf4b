package fuzz

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// stampByte is the byte op writes at arena offset addr: a hash of both, so a
// byte written by another op (or for another address) reads differently
// with probability 255/256 — the stamp array says exactly who wrote it.
func stampByte(op int32, addr int64) byte {
	x := uint64(uint32(op))<<32 ^ uint64(addr) ^ 0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return byte(x)
}

// complete executes op atomically — every read checks the bytes it sees,
// then every write stamps its bytes — and completes its event.
func (s *Sim) complete(op int) {
	o := &s.ops[op]
	if !o.rejected {
		for ri := range o.reads {
			rc := &o.reads[ri]
			sb := &s.bufs[rc.buf]
			for j, i := range rc.bytes {
				want := rc.expect[j]
				if want == 0 {
					continue // never written: no expectation
				}
				s.res.Reads++
				addr := sb.off + int64(i)
				if got, real := s.stamp[addr], sb.mem[i]; got != want || real != stampByte(want-1, addr) {
					s.log = append(s.log, logEntry{op: op, note: "wrong read"})
					s.wrongRead(op, rc, j, got, real)
					return
				}
			}
		}
		for _, w := range o.writes {
			sb := &s.bufs[w.buf]
			for _, i := range w.bytes {
				addr := sb.off + int64(i)
				s.stamp[addr] = int32(op + 1)
				sb.mem[i] = stampByte(int32(op), addr)
			}
		}
	}
	if err := s.tl.Complete(o.ev); err != nil {
		s.fail(FailError, "complete o%d (%v): %v", op, o.ev, err)
		return
	}
	o.completed = true
	e := s.p.Ops[op].Engine
	s.doneSeq[e]++
	s.res.Completions++
	s.dropPins(op, -1)
	s.log = append(s.log, logEntry{op: op})
	if s.waiting {
		s.waiting, s.retrying = false, true
	}
}

// wrongRead reports the counterexample: who read what, through which view
// chain, what it expected and who overwrote it.
func (s *Sim) wrongRead(op int, rc *readCheck, j int, got int32, real byte) {
	p := s.p
	sb := &s.bufs[rc.buf]
	i := rc.bytes[j]
	addr := sb.off + int64(i)
	want := rc.expect[j]
	u := p.Steps[p.Ops[op].Step].Uses[rc.use]
	var d strings.Builder
	fmt.Fprintf(&d, "o%d (%v) read arena byte %d = b%d[%d] (b%d at [%d, %d))\n", op, s.ops[op].ev, addr, rc.buf, i, rc.buf, sb.off, sb.off+sb.size)
	fmt.Fprintf(&d, "    through %s\n    layout %v\n", p.Chain(u.View), p.Views[u.View].Layout)
	fmt.Fprintf(&d, "  expected the write of %s\n", s.opWhere(int(want-1), -1))
	switch {
	case got == 0:
		fmt.Fprintf(&d, "  found no stamp at all")
	case got == want:
		fmt.Fprintf(&d, "  the stamp is right but the real byte is %#02x, want %#02x", real, stampByte(want-1, addr))
	default:
		fmt.Fprintf(&d, "  found the write of %s", s.opWhere(int(got-1), addr))
	}
	if got != want && real != stampByte(got-1, addr) {
		fmt.Fprintf(&d, "\n  (real byte %#02x agrees with neither)", real)
	}
	if s.deferred != nil {
		fmt.Fprintf(&d, "\n  earlier: %s", s.deferred.Detail)
	}
	s.res.Failure = s.newFailure(FailWrongRead, d.String())
	s.res.Failure.Wrong = &WrongRead{Addr: addr, Reader: op, View: u.View, Buf: rc.buf, Byte: int64(i), Expected: int(want - 1), Found: int(got - 1)}
}

// opWhere describes op, and which of its writes covers arena byte addr.
func (s *Sim) opWhere(op int, addr int64) string {
	if op < 0 || op >= len(s.ops) {
		return "nobody"
	}
	desc := fmt.Sprintf("o%d (%v: %s)", op, s.ops[op].ev, s.p.StepString(s.p.Ops[op].Step))
	if addr < 0 {
		return desc
	}
	for _, w := range s.ops[op].writes {
		sb := &s.bufs[w.buf]
		if _, ok := slices.BinarySearch(w.bytes, int32(addr-sb.off)); ok {
			return fmt.Sprintf("%s into b%d[%d] (b%d at [%d, %d))", desc, w.buf, addr-sb.off, w.buf, sb.off, sb.off+sb.size)
		}
	}
	return desc
}

// overlaps reports whether the pin covers a byte of [lo, hi).
func (pn *pin) overlaps(lo, hi int64) bool {
	if pn.hi <= lo || pn.lo >= hi {
		return false
	}
	k, _ := slices.BinarySearch(pn.bytes, lo)
	return k < len(pn.bytes) && pn.bytes[k] < hi
}

// addPin records a user the Allocator now indexes: op's use of view v, or
// reservation res (op = -1).
func (s *Sim) addPin(op, res, v int) {
	vd := &s.p.Views[v]
	base := s.bufs[vd.Buf].off
	bytes := make([]int64, len(vd.Bytes))
	for j, i := range vd.Bytes {
		bytes[j] = base + int64(i)
	}
	pn := pin{op: op, res: res, active: true, bytes: bytes}
	if len(bytes) > 0 {
		pn.lo, pn.hi = bytes[0], bytes[len(bytes)-1]+1
	}
	s.pins = append(s.pins, pn)
}

// dropPins ends op's pins (op >= 0) or reservation res's.
func (s *Sim) dropPins(op, res int) {
	for i := range s.pins {
		pn := &s.pins[i]
		if pn.active && ((op >= 0 && pn.op == op) || (op < 0 && pn.op < 0 && pn.res == res)) {
			pn.active = false
		}
	}
	// Forget inactive pins now and then so the list stays short.
	if len(s.pins) > 64 {
		s.pins = slices.DeleteFunc(s.pins, func(pn pin) bool { return !pn.active })
	}
}

// pinnedBy names a pending user covering a byte of [lo, hi) that is not
// ordered before (or equal to) the op whose clock is c — any pending user
// when c is nil — or returns "".
func (s *Sim) pinnedBy(lo, hi int64, c *vclock) string {
	for i := range s.pins {
		pn := &s.pins[i]
		if !pn.active || !pn.overlaps(lo, hi) {
			continue
		}
		if pn.op < 0 {
			return "reservation r" + itoa(pn.res)
		}
		if c == nil || !s.ord.before(pn.op, c) {
			return fmt.Sprintf("o%d (%v)", pn.op, s.ops[pn.op].ev)
		}
	}
	return ""
}

// viewPinnedBy is pinnedBy over the bytes of view v.
func (s *Sim) viewPinnedBy(v int, c *vclock) string {
	vd := &s.p.Views[v]
	base := s.bufs[vd.Buf].off
	for _, i := range vd.Bytes {
		if who := s.pinnedBy(base+int64(i), base+int64(i)+1, c); who != "" {
			return who
		}
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

// fenceString formats the first n components of a clock, e.g. "{e0:2 e1:1}".
func fenceString(c *vclock, n int) string {
	var sb strings.Builder
	sb.WriteByte('{')
	first := true
	for e := 0; e < n; e++ {
		if c[e] == 0 {
			continue
		}
		if !first {
			sb.WriteByte(' ')
		}
		first = false
		fmt.Fprintf(&sb, "e%d:%d", e, c[e])
	}
	sb.WriteByte('}')
	return sb.String()
}
