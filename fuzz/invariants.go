package fuzz

import (
	"fmt"
)

// checkStep runs every invariant checker after a step: the Allocator's
// (arena and liveness included), the Timeline's, and the simulation's own.
func (s *Sim) checkStep() {
	if err := s.a.CheckInvariants(); err != nil {
		s.fail(FailInvariant, "Allocator: %v", err)
		return
	}
	// The Timeline's own check walks its whole history: every few steps.
	if (s.res.HostSteps+s.res.Completions)&7 == 0 || s.next == len(s.p.Steps) {
		if err := s.tl.CheckInvariants(); err != nil {
			s.fail(FailInvariant, "Timeline: %v", err)
			return
		}
	}
	if err := s.CheckInvariants(); err != nil {
		s.fail(FailOracle, "%v", err)
	}
}

// CheckInvariants verifies that the Allocator and the Timeline agree with
// the simulation's model, returning the first disagreement:
//   - the Timeline's completed clock is the model's (ops complete in order);
//   - every stamped arena byte holds its stamp's byte in the real backing;
//   - bytes held by the program's buffers are pairwise disjoint;
//   - Stats: the Allocator indexes exactly the pending uses and outstanding
//     reservations (count and union of bytes), and holds exactly the
//     program's live buffers;
//   - with no user pending, nothing released waits to return except parts
//     of granules the program still holds part of.
func (s *Sim) CheckInvariants() error {
	done := s.tl.CompletedClock()
	for e := 0; e < s.p.Engines; e++ {
		if uint32(done[s.eng[e]]) != s.doneSeq[e] {
			return fmt.Errorf("engine e%d: the Timeline has completed %d ops, the model %d", e, done[s.eng[e]], s.doneSeq[e])
		}
	}
	for addr, st := range s.stamp {
		if st != 0 && s.mem[addr] != stampByte(st-1, int64(addr)) {
			return fmt.Errorf("arena byte %d: stamped by o%d but holds %#02x", addr, st-1, s.mem[addr])
		}
	}
	if s.owner == nil {
		s.owner, s.covered = make([]int32, s.p.Capacity), make([]bool, s.p.Capacity)
	}
	owner, covered := s.owner, s.covered
	clear(owner)
	clear(covered)
	held := 0
	for b := range s.bufs {
		sb := &s.bufs[b]
		if !sb.held {
			continue
		}
		if !sb.b.Released() {
			held++
		}
		for i, d := range sb.dead {
			if d {
				continue
			}
			addr := sb.off + int64(i)
			if o := owner[addr]; o != 0 {
				return fmt.Errorf("arena byte %d is held by both b%d and b%d", addr, o-1, b)
			}
			owner[addr] = int32(b + 1)
		}
	}
	// Released bytes may wait in a granule the program still uses part of.
	var slack int64
	g := s.p.Granule
	for lo := int64(0); lo < s.p.Capacity; lo += g {
		owned := int64(0)
		for _, o := range owner[lo : lo+g] {
			if o != 0 {
				owned++
			}
		}
		if owned > 0 {
			slack += g - owned
		}
	}
	for b := range s.bufs {
		if sb := &s.bufs[b]; sb.held && s.p.Bufs[b].From < 0 {
			if end := sb.off + sb.size; end%g != 0 && owner[end-1] == 0 {
				slack += end % g // the granule the buffer's padding keeps, its last bytes discarded
			}
		}
	}
	st := s.a.Stats()
	users := 0
	var pending int64
	for i := range s.pins {
		pn := &s.pins[i]
		if !pn.active {
			continue
		}
		users++
		for _, addr := range pn.bytes {
			if !covered[addr] {
				covered[addr] = true
				pending++
			}
		}
	}
	if st.Users != users || st.Pending != pending {
		return fmt.Errorf("the Allocator has %d pending users over %d bytes, the model %d over %d", st.Users, st.Pending, users, pending)
	}
	if st.Buffers != held {
		return fmt.Errorf("the Allocator holds %d buffers, the model %d", st.Buffers, held)
	}
	if users == 0 && st.Held > slack {
		return fmt.Errorf("nothing is pending, yet %d released bytes have not returned (at most %d may wait in granules the program still uses part of)", st.Held, slack)
	}
	return nil
}
