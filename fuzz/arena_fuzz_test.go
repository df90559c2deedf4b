package fuzz

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/internal/testutil"
)

// arenaModel is the slow reference for FuzzArena: one bit per granule.
type arenaModel struct {
	used []bool // granule allocated
	high int64  // highest allocated end, granules
	peak int64  // highest in-use count, granules
}

func (m *arenaModel) inUse() (n int64) {
	for _, u := range m.used {
		if u {
			n++
		}
	}
	return n
}

// regions returns the maximal free runs in address order, in granules.
func (m *arenaModel) regions() [][2]int64 {
	var out [][2]int64
	for g := int64(0); g < int64(len(m.used)); g++ {
		if m.used[g] {
			continue
		}
		lo := g
		for g < int64(len(m.used)) && !m.used[g] {
			g++
		}
		out = append(out, [2]int64{lo, g})
	}
	return out
}

func (m *arenaModel) largest() (l int64) {
	for _, r := range m.regions() {
		l = max(l, r[1]-r[0])
	}
	return l
}

func (m *arenaModel) all(lo, hi int64, used bool) bool {
	for g := lo; g < hi; g++ {
		if m.used[g] != used {
			return false
		}
	}
	return true
}

// compare checks every observable of a against the model.
func (m *arenaModel) compare(a *arena.Arena) error {
	if err := a.CheckInvariants(); err != nil {
		return err
	}
	gb := a.Granule()
	var want []arena.Block
	for _, r := range m.regions() {
		want = append(want, arena.Block{Offset: r[0] * gb, Size: (r[1] - r[0]) * gb})
	}
	if got := a.AppendFreeRegions(nil); !slices.Equal(got, want) {
		return fmt.Errorf("free regions %v, model %v", got, want)
	}
	s := a.Stats()
	c, use := int64(len(m.used)), m.inUse()
	if s.Capacity != c*gb || s.InUse != use*gb || s.LargestFree != m.largest()*gb ||
		s.FreeRegions != len(want) || s.HighWater != m.high*gb || s.PeakInUse != m.peak*gb {
		return fmt.Errorf("stats %+v, model capacity %d in use %d largest %d high %d peak %d (granules)",
			s, c, use, m.largest(), m.high, m.peak)
	}
	return nil
}

// FuzzArena drives an arena with a byte-coded program of allocations, frees
// of whole blocks, frees of pieces, frees of arbitrary ranges and bad
// calls, checking it against a bitmap of granules and CheckInvariants after
// every step.
//
// Program: byte 0 picks the granule (16, 64 or 256 B), the fit and planning
// mode; byte 1 the capacity in granules (0-255; at least 1 when bounded).
// Then each op is one opcode byte and two argument bytes.
func FuzzArena(f *testing.F) {
	f.Add([]byte{0x00, 16, 0, 4, 0, 0, 1, 0, 1, 0, 0, 2, 0, 0})
	f.Add([]byte{0x05, 40, 0, 8, 0, 0, 3, 0, 0, 20, 1, 0, 1, 0, 5, 2, 0, 0, 1, 1})
	f.Add([]byte{0x0a, 0, 0, 30, 0, 0, 60, 0, 1, 0, 0, 0, 200, 0, 3, 1, 2})
	f.Add([]byte{0x0e, 8, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0, 2, 0, 4, 1, 1, 5, 0, 0})
	f.Fuzz(runArenaProgram)
}

// runArenaProgram runs one FuzzArena program.
func runArenaProgram(t *testing.T, prog []byte) {
	if len(prog) < 2 {
		return
	}
	granule := []int64{16, 64, 256, 256}[prog[0]&3]
	fit := []arena.Fit{arena.FitLean, arena.FitFast}[prog[0]>>2&1]
	unbounded := prog[0]>>3&1 == 1
	capG := int64(prog[1])
	if !unbounded && capG == 0 {
		capG = 1
	}
	var backing []byte
	if !unbounded && prog[0]>>4&1 == 1 {
		backing = make([]byte, capG*granule)
	}
	a, err := arena.New(arena.Config{Capacity: capG * granule, Granule: granule, Fit: fit, Unbounded: unbounded, Backing: backing})
	if err != nil {
		t.Fatal(err)
	}
	r := &arenaRun{t: t, a: a, m: &arenaModel{used: make([]bool, capG)}, granule: granule, unbounded: unbounded, stamp: 1}
	for i := 2; i+2 < len(prog); i += 3 {
		op, x, y := prog[i]%6, int64(prog[i+1]), int64(prog[i+2])
		r.i, r.before, r.stats = i, a.AppendFreeRegions(nil), a.Stats()
		switch op {
		case 0, 1:
			r.alloc(x, y)
		case 2, 3:
			r.freeLive(x, y)
		case 4:
			r.freeRange(x, y)
		case 5:
			r.badCalls(x, y)
		}
		if err := r.m.compare(a); err != nil {
			t.Fatalf("op %d (%d %d %d): %v", i, op, x, y, err)
		}
	}
	a.Reset()
	if !unbounded {
		if s := a.Stats(); s.Free != capG*granule || s.FreeRegions != 1 {
			t.Fatalf("after Reset: %+v", s)
		}
	}
	testutil.Invariants(t, a)
}

// arenaRun is one FuzzArena program's run: the arena, its model, the
// blocks and pieces handed out and not yet freed (live), the byte the next
// block is stamped with, and the op at hand (i) with the arena's free
// regions and stats before it.
type arenaRun struct {
	t         *testing.T
	a         *arena.Arena
	m         *arenaModel
	granule   int64
	unbounded bool
	live      []arena.Block
	stamp     byte

	i      int
	before []arena.Block
	stats  arena.Stats
}

// unchanged fails unless the op at hand left the arena as it was.
func (r *arenaRun) unchanged(what string) {
	if !slices.Equal(r.a.AppendFreeRegions(nil), r.before) || r.a.Stats() != r.stats {
		r.t.Fatalf("op %d: %s changed the arena", r.i, what)
	}
}

// alloc allocates x+1 granules, less up to a granule in bytes.
func (r *arenaRun) alloc(x, y int64) {
	t, a, m, granule, i := r.t, r.a, r.m, r.granule, r.i
	c := int64(len(m.used))
	n := x%64 + 1
	size := n*granule - y%granule
	fits := m.largest() >= n
	b, err := a.Alloc(size)
	if err != nil {
		if !errors.Is(err, arena.ErrNoSpace) || fits || r.unbounded {
			t.Fatalf("op %d: Alloc(%d) with largest free %d granules: %v", i, size, m.largest(), err)
		}
		r.unchanged("failed Alloc")
		return
	}
	lo, hi := b.Offset/granule, b.End()/granule
	if b.Size != n*granule || b.Offset%granule != 0 || lo < 0 {
		t.Fatalf("op %d: Alloc(%d) = %+v", i, size, b)
	}
	if !fits {
		if !r.unbounded {
			t.Fatalf("op %d: Alloc fitted where nothing fits", i)
		}
		m.used = append(m.used, make([]bool, hi-c)...)
	}
	if hi > int64(len(m.used)) || !m.all(lo, hi, false) {
		t.Fatalf("op %d: Alloc gave %+v over used or missing granules", i, b)
	}
	for g := lo; g < hi; g++ {
		m.used[g] = true
	}
	m.high = max(m.high, hi)
	m.peak = max(m.peak, m.inUse())
	if buf := a.Bytes(b); buf != nil {
		for k := range buf {
			buf[k] = r.stamp
		}
	}
	r.stamp = r.stamp%250 + 1
	r.live = append(r.live, b)
}

// freeLive frees a live block, whole (y even) or a piece.
func (r *arenaRun) freeLive(x, y int64) {
	t, a, m, granule, i := r.t, r.a, r.m, r.granule, r.i
	if len(r.live) == 0 {
		return
	}
	k := int(x) % len(r.live)
	b := r.live[k]
	if buf := a.Bytes(b); buf != nil {
		for _, v := range buf {
			if v != buf[0] {
				t.Fatalf("op %d: block %+v was overwritten", i, b)
			}
		}
	}
	lo, hi := b.Offset/granule, b.End()/granule
	plo, phi := lo, hi
	if y&1 == 1 && hi-lo > 1 {
		plo = lo + (y>>1)%(hi-lo)
		phi = plo + 1 + (y>>3)%(hi-plo)
	}
	if err := a.Free(plo*granule, (phi-plo)*granule); err != nil {
		t.Fatalf("op %d: Free of live piece [%d, %d) of [%d, %d): %v", i, plo, phi, lo, hi, err)
	}
	for g := plo; g < phi; g++ {
		m.used[g] = false
	}
	r.live = slices.Delete(r.live, k, k+1)
	if plo > lo {
		r.live = append(r.live, arena.Block{Offset: lo * granule, Size: (plo - lo) * granule})
	}
	if phi < hi {
		r.live = append(r.live, arena.Block{Offset: phi * granule, Size: (hi - phi) * granule})
	}
}

// freeRange frees an arbitrary range: it succeeds exactly when all of it
// is allocated.
func (r *arenaRun) freeRange(x, y int64) {
	t, a, m, granule, i := r.t, r.a, r.m, r.granule, r.i
	c := int64(len(m.used))
	if c == 0 {
		return
	}
	lo := x % c
	hi := lo + 1 + y%(c-lo)
	err := a.Free(lo*granule, (hi-lo)*granule)
	if m.all(lo, hi, true) {
		if err != nil {
			t.Fatalf("op %d: Free of allocated [%d, %d): %v", i, lo, hi, err)
		}
		for g := lo; g < hi; g++ {
			m.used[g] = false
		}
		r.live = cut(r.live, lo*granule, hi*granule)
		return
	}
	if !errors.Is(err, arena.ErrNotAllocated) {
		t.Fatalf("op %d: Free of partly free [%d, %d): %v", i, lo, hi, err)
	}
	r.unchanged("refused Free")
}

// badCalls makes a Free that may be bad in any way, and an IsAllocated
// query.
func (r *arenaRun) badCalls(x, y int64) {
	t, a, m, granule, i := r.t, r.a, r.m, r.granule, r.i
	c := int64(len(m.used))
	off := (x - 8) * granule / 4
	size := (y - 8) * granule / 4
	err := a.Free(off, size)
	switch {
	case size <= 0:
		if !errors.Is(err, arena.ErrInvalidSize) {
			t.Fatalf("op %d: Free(%d, %d) = %v", i, off, size, err)
		}
	case off%granule != 0 || size%granule != 0:
		if !errors.Is(err, arena.ErrMisaligned) {
			t.Fatalf("op %d: Free(%d, %d) = %v", i, off, size, err)
		}
	case off < 0 || off+size > c*granule:
		if !errors.Is(err, arena.ErrOutOfRange) {
			t.Fatalf("op %d: Free(%d, %d) = %v", i, off, size, err)
		}
	default:
		lo, hi := off/granule, (off+size)/granule
		if m.all(lo, hi, true) {
			if err != nil {
				t.Fatalf("op %d: Free(%d, %d): %v", i, off, size, err)
			}
			for g := lo; g < hi; g++ {
				m.used[g] = false
			}
			r.live = cut(r.live, off, off+size)
		} else if !errors.Is(err, arena.ErrNotAllocated) {
			t.Fatalf("op %d: Free(%d, %d) = %v", i, off, size, err)
		}
	}
	if err != nil {
		r.unchanged("bad Free")
	}
	if c > 0 {
		qo := x * granule / 3 % (c * granule)
		qs := 1 + y%(c*granule-qo)
		want := m.all(qo/granule, (qo+qs+granule-1)/granule, true)
		if got := a.IsAllocated(qo, qs); got != want {
			t.Fatalf("op %d: IsAllocated(%d, %d) = %v, want %v", i, qo, qs, got, want)
		}
	}
}

// cut removes the byte range [lo, hi) from the live blocks.
func cut(live []arena.Block, lo, hi int64) []arena.Block {
	var out []arena.Block
	for _, b := range live {
		if b.End() <= lo || hi <= b.Offset {
			out = append(out, b)
			continue
		}
		if b.Offset < lo {
			out = append(out, arena.Block{Offset: b.Offset, Size: lo - b.Offset})
		}
		if hi < b.End() {
			out = append(out, arena.Block{Offset: hi, Size: b.End() - hi})
		}
	}
	return out
}
