package fuzz

import (
	"fmt"
	"slices"

	"github.com/subarena/subarena"
)

// maxCapacity bounds a program's arena: the simulator keeps a byte and a
// stamp per arena byte.
const maxCapacity = 1 << 24

// ordering is the program-level model of happens-before: one vector clock
// per op, computed the way a Timeline computes them (previous op on the
// engine, the waits, every host sync so far).
type ordering struct {
	engLast [MaxEngines]vclock
	engSeq  [MaxEngines]uint32
	host    vclock
	clock   []vclock // per op
	engine  []int    // per op
	seq     []uint32 // per op
}

// submit records op (the next one) on engine e waiting for waits, and
// returns its clock.
func (o *ordering) submit(e int, waits []int) vclock {
	c := o.engLast[e]
	c.join(&o.host)
	for _, w := range waits {
		c.join(&o.clock[w])
	}
	o.engSeq[e]++
	c[e] = o.engSeq[e]
	o.engLast[e] = c
	o.clock = append(o.clock, c)
	o.engine = append(o.engine, e)
	o.seq = append(o.seq, o.engSeq[e])
	return c
}

// before reports whether op p happens-before (or is) the op whose clock is c.
func (o *ordering) before(p int, c *vclock) bool { return c[o.engine[p]] >= o.seq[p] }

// point returns the clock of the point where engine e's next op starts.
func (o *ordering) point(e int) vclock {
	c := o.engLast[e]
	c.join(&o.host)
	return c
}

// history is, per byte of a root buffer, its last writer and the readers
// since: what a new op touching the byte must be ordered after.
type history struct {
	lastW   []int32   // op+1, 0 when never written
	readers [][]int32 // ops that read since the last write
}

func newHistory(size int64) *history {
	return &history{lastW: make([]int32, size), readers: make([][]int32, size)}
}

// needs appends to dst the ops that must happen-before an op accessing byte
// i with acc.
func (h *history) needs(dst []int, i int64, acc subarena.Access) []int {
	if w := h.lastW[i]; w > 0 {
		dst = append(dst, int(w-1))
	}
	if acc&subarena.Write != 0 {
		for _, r := range h.readers[i] {
			dst = append(dst, int(r))
		}
	}
	return dst
}

// record notes that op accessed byte i with acc.
func (h *history) record(op int, i int64, acc subarena.Access) {
	if acc&subarena.Write != 0 {
		h.lastW[i] = int32(op + 1)
		h.readers[i] = h.readers[i][:0]
		return
	}
	rs := h.readers[i]
	if n := len(rs); n == 0 || rs[n-1] != int32(op) {
		h.readers[i] = append(rs, int32(op))
	}
}

// Validate checks that p is well-formed: every step refers to things that
// exist at that point (buffers allocated and not released, bytes not
// discarded, ops submitted, reservations outstanding), the program is
// race-free, so every read has a well-defined expected writer, and it ends
// holding nothing (every buffer released, every reservation used or
// cancelled). The error wraps ErrMalformed.
func (p *Program) Validate() error {
	if p.valid.Load() {
		return nil
	}
	if err := p.validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrMalformed, p.Name, err)
	}
	p.valid.Store(true)
	return nil
}

func (p *Program) validate() error {
	if p.Engines < 1 || p.Engines > MaxEngines {
		return fmt.Errorf("%d engines", p.Engines)
	}
	if p.Granule <= 0 || p.Granule&(p.Granule-1) != 0 || p.Capacity <= 0 || p.Capacity%p.Granule != 0 || p.Capacity > maxCapacity {
		return fmt.Errorf("capacity %d, granule %d", p.Capacity, p.Granule)
	}
	if p.Reservations < 0 {
		return fmt.Errorf("%d reservations", p.Reservations)
	}
	for b := range p.Bufs {
		d := &p.Bufs[b]
		if d.Size <= 0 || d.From >= len(p.Views) || (d.From < 0 && (d.Engine < 0 || d.Engine >= p.Engines)) {
			return fmt.Errorf("buffer b%d: bad size, engine or source", b)
		}
	}
	for v := range p.Views {
		d := &p.Views[v]
		if d.Buf < 0 || d.Buf >= len(p.Bufs) || d.Parent >= v || (d.Parent >= 0 && p.Views[d.Parent].Buf != d.Buf) {
			return fmt.Errorf("view v%d: bad buffer or parent", v)
		}
		var parent = d.Layout
		if d.Parent >= 0 {
			parent = p.Views[d.Parent].Layout
		}
		l, err := d.Op.layout(parent, p.Bufs[d.Buf].Size)
		if err != nil || !l.Equal(d.Layout) {
			return fmt.Errorf("view v%d: %v does not give %v: %v", v, d.Op, d.Layout, err)
		}
		if bytes, ok := oracleBytes(l); !ok || !slices.Equal(bytes, d.Bytes) {
			return fmt.Errorf("view v%d: its bytes are not the ones its layout covers", v)
		}
	}
	lin := p.lineages()
	hist := map[int]*history{}
	var ord ordering
	allocated := make([]bool, len(p.Bufs))
	released := make([]bool, len(p.Bufs))
	dead := make([][]bool, len(p.Bufs))
	resv := make([]int, p.Reservations) // 0 unused, 1 outstanding, 2 done
	resvView := make([]int, p.Reservations)
	liveView := func(v int) error {
		if v < 0 || v >= len(p.Views) {
			return fmt.Errorf("no view v%d", v)
		}
		b := p.Views[v].Buf
		if !allocated[b] || released[b] {
			return fmt.Errorf("view v%d of buffer b%d not held", v, b)
		}
		for _, i := range p.Views[v].Bytes {
			if dead[b][i] {
				return fmt.Errorf("view v%d touches discarded byte %d of b%d", v, i, b)
			}
		}
		return nil
	}
	kill := func(v int) {
		b := p.Views[v].Buf
		for _, i := range p.Views[v].Bytes {
			dead[b][i] = true
		}
	}
	var needs []int
	for i := range p.Steps {
		s := &p.Steps[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("step %d (%s): %s", i, p.StepString(i), fmt.Sprintf(format, args...))
		}
		switch s.Kind {
		case StepAlloc:
			if s.Buf < 0 || s.Buf >= len(p.Bufs) || allocated[s.Buf] || p.Bufs[s.Buf].From >= 0 || s.Size != p.Bufs[s.Buf].Size || s.Size <= 0 || s.Engine < 0 || s.Engine >= p.Engines {
				return bad("bad alloc")
			}
			allocated[s.Buf] = true
			dead[s.Buf] = make([]bool, s.Size)
			if lin[s.Buf].root == s.Buf {
				hist[s.Buf] = newHistory(s.Size)
			}
		case StepSubmit:
			if s.Op != len(ord.clock) || s.Op >= len(p.Ops) || p.Ops[s.Op].Step != i || p.Ops[s.Op].Engine != s.Engine || s.Engine < 0 || s.Engine >= p.Engines {
				return bad("bad op")
			}
			for _, w := range s.Waits {
				if w < 0 || w >= s.Op {
					return bad("waits for unsubmitted o%d", w)
				}
			}
			for _, u := range s.Uses {
				if u.Access&^subarena.ReadWrite != 0 || u.Access == 0 {
					return bad("access %v", u.Access)
				}
				if u.Res >= 0 {
					if u.Res >= len(resv) || resv[u.Res] != 1 || resvView[u.Res] != u.View {
						return bad("reservation r%d not outstanding for v%d", u.Res, u.View)
					}
					resv[u.Res] = 2
					continue
				}
				if err := liveView(u.View); err != nil {
					return bad("%v", err)
				}
			}
			c := ord.submit(s.Engine, s.Waits)
			needs = needs[:0]
			for _, u := range s.Uses {
				l := lin[p.Views[u.View].Buf]
				for _, b := range p.Views[u.View].Bytes {
					needs = hist[l.root].needs(needs, l.off+int64(b), u.Access)
				}
			}
			for _, n := range needs {
				if n != s.Op && !ord.before(n, &c) {
					return bad("races with o%d (not ordered before it)", n)
				}
			}
			for _, acc := range []subarena.Access{subarena.Read, subarena.Write} {
				for _, u := range s.Uses {
					if u.Access&acc == 0 {
						continue
					}
					l := lin[p.Views[u.View].Buf]
					for _, b := range p.Views[u.View].Bytes {
						hist[l.root].record(s.Op, l.off+int64(b), acc)
					}
				}
			}
		case StepRelease:
			if s.Buf < 0 || s.Buf >= len(p.Bufs) || !allocated[s.Buf] || released[s.Buf] {
				return bad("buffer not held")
			}
			released[s.Buf] = true
		case StepDiscard, StepClaim:
			if err := liveView(s.View); err != nil {
				return bad("%v", err)
			}
			if len(p.Views[s.View].Bytes) == 0 {
				return bad("empty view")
			}
			kill(s.View)
		case StepHostSync:
			if s.Op < 0 || s.Op >= len(ord.clock) {
				return bad("op not submitted")
			}
			ord.host.join(&ord.clock[s.Op])
		case StepDonate:
			if err := liveView(s.View); err != nil {
				return bad("%v", err)
			}
			bytes := p.Views[s.View].Bytes
			if s.Op < 0 || s.Op >= len(ord.clock) || !contiguous(bytes) {
				return bad("op not submitted or view not dense")
			}
			if s.Buf < 0 || s.Buf >= len(p.Bufs) || allocated[s.Buf] || p.Bufs[s.Buf].From != s.View || p.Bufs[s.Buf].Op != s.Op ||
				p.Bufs[s.Buf].Size != int64(len(bytes)) || lin[s.Buf].root == s.Buf {
				return bad("bad donated buffer")
			}
			kill(s.View)
			allocated[s.Buf] = true
			dead[s.Buf] = make([]bool, len(bytes))
		case StepReserve:
			if err := liveView(s.View); err != nil {
				return bad("%v", err)
			}
			if s.Res < 0 || s.Res >= len(resv) || resv[s.Res] != 0 || len(p.Views[s.View].Bytes) == 0 {
				return bad("bad reservation")
			}
			resv[s.Res], resvView[s.Res] = 1, s.View
		case StepCancel:
			if s.Res < 0 || s.Res >= len(resv) || resv[s.Res] != 1 {
				return bad("reservation not outstanding")
			}
			resv[s.Res] = 2
		default:
			return bad("unknown step kind")
		}
	}
	if len(ord.clock) != len(p.Ops) {
		return fmt.Errorf("%d ops defined, %d submitted", len(p.Ops), len(ord.clock))
	}
	// A program ends with nothing held, so that the arena must be whole.
	for b := range p.Bufs {
		if allocated[b] && !released[b] && slices.Contains(dead[b], false) {
			return fmt.Errorf("buffer b%d is never released", b)
		}
	}
	for r, st := range resv {
		if st == 1 {
			return fmt.Errorf("reservation r%d is never used or cancelled", r)
		}
	}
	return nil
}
