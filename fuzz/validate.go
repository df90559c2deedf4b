package fuzz

import (
	"errors"
	"fmt"
	"slices"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
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
	if err := p.validateShape(); err != nil {
		return err
	}
	v := newValidator(p)
	for i := range p.Steps {
		if err := v.step(i); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, p.StepString(i), err)
		}
	}
	return v.end()
}

// validateShape checks the program's sizes, buffers and views, before any
// step: every view's layout is what its op makes of its parent's, and its
// bytes are the ones that layout covers.
func (p *Program) validateShape() error {
	if p.Engines < 1 || p.Engines > MaxEngines {
		return fmt.Errorf("%d engines", p.Engines)
	}
	if !ranges.Granule(p.Granule).Valid() || p.Capacity <= 0 || p.Capacity%p.Granule != 0 || p.Capacity > maxCapacity {
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
	return nil
}

// Reservation states during validation.
const (
	resUnused = iota
	resOutstanding
	resDone
)

// validator walks a program's steps, keeping what exists at each one:
// buffers allocated and released, discarded bytes, submitted ops and their
// ordering, reservations, and per root buffer the access history that
// makes every read's writer well-defined.
type validator struct {
	p         *Program
	lin       []lineage
	hist      map[int]*history
	ord       ordering
	allocated []bool
	released  []bool
	dead      [][]bool
	resv      []int // resUnused, resOutstanding or resDone
	resvView  []int
	needs     []int
}

func newValidator(p *Program) *validator {
	return &validator{
		p: p, lin: p.lineages(), hist: map[int]*history{},
		allocated: make([]bool, len(p.Bufs)), released: make([]bool, len(p.Bufs)), dead: make([][]bool, len(p.Bufs)),
		resv: make([]int, p.Reservations), resvView: make([]int, p.Reservations),
	}
}

// step checks step i and applies it.
func (v *validator) step(i int) error {
	s := &v.p.Steps[i]
	switch s.Kind {
	case StepAlloc:
		return v.alloc(s)
	case StepSubmit:
		return v.submit(i, s)
	case StepRelease:
		if s.Buf < 0 || s.Buf >= len(v.p.Bufs) || !v.allocated[s.Buf] || v.released[s.Buf] {
			return errors.New("buffer not held")
		}
		v.released[s.Buf] = true
	case StepDiscard, StepClaim:
		if err := v.liveView(s.View); err != nil {
			return err
		}
		if len(v.p.Views[s.View].Bytes) == 0 {
			return errors.New("empty view")
		}
		v.kill(s.View)
	case StepHostSync:
		if s.Op < 0 || s.Op >= len(v.ord.clock) {
			return errors.New("op not submitted")
		}
		v.ord.host.join(&v.ord.clock[s.Op])
	case StepDonate:
		return v.donate(s)
	case StepReserve:
		if err := v.liveView(s.View); err != nil {
			return err
		}
		if s.Res < 0 || s.Res >= len(v.resv) || v.resv[s.Res] != resUnused || len(v.p.Views[s.View].Bytes) == 0 {
			return errors.New("bad reservation")
		}
		v.resv[s.Res], v.resvView[s.Res] = resOutstanding, s.View
	case StepCancel:
		if s.Res < 0 || s.Res >= len(v.resv) || v.resv[s.Res] != resOutstanding {
			return errors.New("reservation not outstanding")
		}
		v.resv[s.Res] = resDone
	default:
		return errors.New("unknown step kind")
	}
	return nil
}

// liveView checks that view vi exists and that the program holds all its
// bytes.
func (v *validator) liveView(vi int) error {
	if vi < 0 || vi >= len(v.p.Views) {
		return fmt.Errorf("no view v%d", vi)
	}
	b := v.p.Views[vi].Buf
	if !v.allocated[b] || v.released[b] {
		return fmt.Errorf("view v%d of buffer b%d not held", vi, b)
	}
	for _, i := range v.p.Views[vi].Bytes {
		if v.dead[b][i] {
			return fmt.Errorf("view v%d touches discarded byte %d of b%d", vi, i, b)
		}
	}
	return nil
}

// kill marks view vi's bytes as no longer held.
func (v *validator) kill(vi int) {
	b := v.p.Views[vi].Buf
	for _, i := range v.p.Views[vi].Bytes {
		v.dead[b][i] = true
	}
}

func (v *validator) alloc(s *Step) error {
	p := v.p
	if s.Buf < 0 || s.Buf >= len(p.Bufs) || v.allocated[s.Buf] || p.Bufs[s.Buf].From >= 0 || s.Size != p.Bufs[s.Buf].Size || s.Size <= 0 || s.Engine < 0 || s.Engine >= p.Engines {
		return errors.New("bad alloc")
	}
	v.allocated[s.Buf] = true
	v.dead[s.Buf] = make([]bool, s.Size)
	if v.lin[s.Buf].root == s.Buf {
		v.hist[s.Buf] = newHistory(s.Size)
	}
	return nil
}

// submit checks op s.Op's waits and uses, that it is ordered after every
// op whose accesses it conflicts with (race-freedom), and records its
// accesses.
func (v *validator) submit(i int, s *Step) error {
	p := v.p
	if s.Op != len(v.ord.clock) || s.Op >= len(p.Ops) || p.Ops[s.Op].Step != i || p.Ops[s.Op].Engine != s.Engine || s.Engine < 0 || s.Engine >= p.Engines {
		return errors.New("bad op")
	}
	for _, w := range s.Waits {
		if w < 0 || w >= s.Op {
			return fmt.Errorf("waits for unsubmitted o%d", w)
		}
	}
	for _, u := range s.Uses {
		if u.Access&^subarena.ReadWrite != 0 || u.Access == 0 {
			return fmt.Errorf("access %v", u.Access)
		}
		if u.Res >= 0 {
			if u.Res >= len(v.resv) || v.resv[u.Res] != resOutstanding || v.resvView[u.Res] != u.View {
				return fmt.Errorf("reservation r%d not outstanding for v%d", u.Res, u.View)
			}
			v.resv[u.Res] = resDone
			continue
		}
		if err := v.liveView(u.View); err != nil {
			return err
		}
	}
	c := v.ord.submit(s.Engine, s.Waits)
	v.needs = v.needs[:0]
	for _, u := range s.Uses {
		l := v.lin[p.Views[u.View].Buf]
		for _, b := range p.Views[u.View].Bytes {
			v.needs = v.hist[l.root].needs(v.needs, l.off+int64(b), u.Access)
		}
	}
	for _, n := range v.needs {
		if n != s.Op && !v.ord.before(n, &c) {
			return fmt.Errorf("races with o%d (not ordered before it)", n)
		}
	}
	for _, acc := range []subarena.Access{subarena.Read, subarena.Write} {
		for _, u := range s.Uses {
			if u.Access&acc == 0 {
				continue
			}
			l := v.lin[p.Views[u.View].Buf]
			for _, b := range p.Views[u.View].Bytes {
				v.hist[l.root].record(s.Op, l.off+int64(b), acc)
			}
		}
	}
	return nil
}

// donate checks that a dense view of held bytes goes to a submitted op as
// the buffer the program declared for it.
func (v *validator) donate(s *Step) error {
	p := v.p
	if err := v.liveView(s.View); err != nil {
		return err
	}
	bytes := p.Views[s.View].Bytes
	if s.Op < 0 || s.Op >= len(v.ord.clock) || !contiguous(bytes) {
		return errors.New("op not submitted or view not dense")
	}
	if s.Buf < 0 || s.Buf >= len(p.Bufs) || v.allocated[s.Buf] || p.Bufs[s.Buf].From != s.View || p.Bufs[s.Buf].Op != s.Op ||
		p.Bufs[s.Buf].Size != int64(len(bytes)) || v.lin[s.Buf].root == s.Buf {
		return errors.New("bad donated buffer")
	}
	v.kill(s.View)
	v.allocated[s.Buf] = true
	v.dead[s.Buf] = make([]bool, len(bytes))
	return nil
}

// end checks the program's end: every op submitted, nothing held (so the
// arena must be whole), no reservation left outstanding.
func (v *validator) end() error {
	p := v.p
	if len(v.ord.clock) != len(p.Ops) {
		return fmt.Errorf("%d ops defined, %d submitted", len(p.Ops), len(v.ord.clock))
	}
	for b := range p.Bufs {
		if v.allocated[b] && !v.released[b] && slices.Contains(v.dead[b], false) {
			return fmt.Errorf("buffer b%d is never released", b)
		}
	}
	for r, st := range v.resv {
		if st == resOutstanding {
			return fmt.Errorf("reservation r%d is never used or cancelled", r)
		}
	}
	return nil
}
