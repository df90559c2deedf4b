package arena

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// model is the slow reference: one owner id per granule (0 = free).
type model struct {
	owner     []int
	unbounded bool
	high      int64
	peak      int64
}

func (m *model) capG() int64 { return int64(len(m.owner)) }

func (m *model) inUse() int64 {
	var n int64
	for _, o := range m.owner {
		if o != 0 {
			n++
		}
	}
	return n
}

// runs returns the maximal free runs in address order.
func (m *model) runs() [][2]int64 {
	var out [][2]int64
	for g := int64(0); g < m.capG(); {
		if m.owner[g] != 0 {
			g++
			continue
		}
		lo := g
		for g < m.capG() && m.owner[g] == 0 {
			g++
		}
		out = append(out, [2]int64{lo, g})
	}
	return out
}

func (m *model) largest() int64 {
	var l int64
	for _, r := range m.runs() {
		l = max(l, r[1]-r[0])
	}
	return l
}

func (m *model) allAllocated(lo, hi int64) bool {
	for g := lo; g < hi; g++ {
		if m.owner[g] == 0 {
			return false
		}
	}
	return true
}

// checkAgainst compares every observable of a with the model.
func (m *model) checkAgainst(a *Arena) error {
	if err := a.CheckInvariants(); err != nil {
		return err
	}
	s := a.Stats()
	gb := a.Granule()
	var want []Block
	for _, r := range m.runs() {
		want = append(want, Block{Offset: r[0] * gb, Size: (r[1] - r[0]) * gb})
	}
	got := a.AppendFreeRegions(nil)
	if !slices.Equal(got, want) {
		return fmt.Errorf("free regions %v, model %v", got, want)
	}
	use := m.inUse()
	frag := 0.0
	if free := m.capG() - use; free > 0 {
		frag = 1 - float64(m.largest())/float64(free)
	}
	ws := Stats{
		Capacity: m.capG() * gb, InUse: use * gb, Free: (m.capG() - use) * gb,
		LargestFree: m.largest() * gb, FreeRegions: len(want),
		HighWater: m.high * gb, PeakInUse: m.peak * gb, Fragmentation: frag,
	}
	if s != ws {
		return fmt.Errorf("stats %+v, model %+v", s, ws)
	}
	return nil
}

type liveBlock struct {
	lo, hi int64 // granules
	id     int
}

// propertyRun drives a with random operations and checks it against the
// model after every step.
func propertyRun(t *testing.T, cfg Config, seed uint64, steps int) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gb := a.Granule()
	p := &propertyState{t: t, cfg: cfg, a: a, gb: gb, nextID: 1,
		m:   &model{owner: make([]int, cfg.Capacity/gb), unbounded: cfg.Unbounded},
		rng: rand.New(rand.NewPCG(seed, 99)), maxReq: max(cfg.Capacity/gb/4, 8)}
	m := p.m
	for step := 0; step < steps; step++ {
		p.step = step
		p.before, p.bs = a.AppendFreeRegions(nil), a.Stats()
		op := p.rng.IntN(100)
		switch {
		case op < 45:
			p.alloc()
		case op < 85 && len(p.live) > 0:
			p.freePiece()
		case op < 93:
			p.freeRange()
		case op < 97:
			p.badInput()
		default:
			p.query()
		}
		if err := m.checkAgainst(a); err != nil {
			t.Fatalf("step %d (op %d): %v", step, op, err)
		}
	}
	a.Reset()
	m.owner = make([]int, cfg.Capacity/gb)
	m.high, m.peak = 0, 0
	if err := m.checkAgainst(a); err != nil {
		t.Fatalf("after reset: %v", err)
	}
}

// propertyState is one propertyRun: the arena, its model, the live
// blocks, and the state before the current step.
type propertyState struct {
	t      *testing.T
	cfg    Config
	a      *Arena
	m      *model
	rng    *rand.Rand
	gb     int64
	live   []liveBlock
	nextID int
	maxReq int64

	step   int
	before []Block // free regions before the step
	bs     Stats   // stats before the step
}

func (p *propertyState) fill(lo, hi int64, id int) {
	gb := p.gb
	if b := p.a.Bytes(Block{Offset: lo * gb, Size: (hi - lo) * gb}); b != nil {
		for i := range b {
			b[i] = byte(id)
		}
	}
}

func (p *propertyState) verify(lo, hi int64) error {
	gb := p.gb
	b := p.a.Bytes(Block{Offset: lo * gb, Size: (hi - lo) * gb})
	if b == nil {
		return nil
	}
	for i := range b {
		if want := byte(p.m.owner[lo+int64(i)/gb]); b[i] != want {
			return fmt.Errorf("byte %d holds %d, owner %d", lo*gb+int64(i), b[i], want)
		}
	}
	return nil
}

func (p *propertyState) unchanged(op string) {
	if after := p.a.AppendFreeRegions(nil); !slices.Equal(p.before, after) || p.a.Stats() != p.bs {
		p.t.Fatalf("%s changed state on error", op)
	}
}

// alloc allocates a random size.
func (p *propertyState) alloc() {
	t, a, m, rng, gb, step := p.t, p.a, p.m, p.rng, p.gb, p.step
	n := 1 + rng.Int64N(p.maxReq)
	if rng.IntN(4) == 0 {
		n = 1 + rng.Int64N(4)
	}
	size := n*gb - rng.Int64N(gb) // any byte size rounding up to n granules
	fits := m.largest() >= n
	b, err := a.Alloc(size)
	if err != nil {
		if !errors.Is(err, ErrNoSpace) || fits || p.cfg.Unbounded {
			t.Fatalf("step %d: alloc %d granules: %v (model largest %d)", step, n, err, m.largest())
		}
		var ns *NoSpaceError
		if !errors.As(err, &ns) || ns.Requested != n*gb || ns.LargestFree != m.largest()*gb {
			t.Fatalf("step %d: no-space figures %+v", step, ns)
		}
		p.unchanged("alloc")
		return
	}
	lo, hi := b.Offset/gb, b.End()/gb
	if b.Offset%gb != 0 || b.Size != n*gb {
		t.Fatalf("step %d: block %+v for %d granules", step, b, n)
	}
	if !fits {
		p.grew(lo, hi)
	} else if hi > m.capG() {
		t.Fatalf("step %d: fitting alloc grew the arena", step)
	}
	for g := lo; g < hi; g++ {
		if m.owner[g] != 0 {
			t.Fatalf("step %d: block %+v overlaps live granule %d", step, b, g)
		}
		m.owner[g] = p.nextID
	}
	p.fill(lo, hi, p.nextID)
	p.live = append(p.live, liveBlock{lo, hi, p.nextID})
	p.nextID = p.nextID%250 + 1
	m.high = max(m.high, hi)
	m.peak = max(m.peak, m.inUse())
}

// grew checks an allocation [lo, hi) that did not fit and grows the model.
func (p *propertyState) grew(lo, hi int64) {
	m := p.m
	if !p.cfg.Unbounded {
		p.t.Fatalf("step %d: alloc succeeded with no fit", p.step)
	}
	// Growth: placed at the start of the top free run, or at the old
	// capacity.
	want := m.capG()
	if r := m.runs(); len(r) > 0 && r[len(r)-1][1] == m.capG() {
		want = r[len(r)-1][0]
	}
	if lo != want {
		p.t.Fatalf("step %d: grew at %d, want %d", p.step, lo, want)
	}
	m.owner = append(m.owner, make([]int, hi-m.capG())...)
}

// freePiece frees a piece of a live block.
func (p *propertyState) freePiece() {
	t, rng, gb, step := p.t, p.rng, p.gb, p.step
	i := rng.IntN(len(p.live))
	blk := p.live[i]
	lo, hi := blk.lo, blk.hi
	switch rng.IntN(4) {
	case 1: // prefix
		hi = lo + 1 + rng.Int64N(hi-lo)
	case 2: // suffix
		lo = hi - 1 - rng.Int64N(hi-lo)
	case 3: // middle
		lo += rng.Int64N(hi - lo)
		hi = lo + 1 + rng.Int64N(blk.hi-lo)
	}
	if err := p.verify(blk.lo, blk.hi); err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	if err := p.a.Free(lo*gb, (hi-lo)*gb); err != nil {
		t.Fatalf("step %d: free [%d, %d) of [%d, %d): %v", step, lo, hi, blk.lo, blk.hi, err)
	}
	for g := lo; g < hi; g++ {
		p.m.owner[g] = 0
	}
	p.live = slices.Delete(p.live, i, i+1)
	if lo > blk.lo {
		p.live = append(p.live, liveBlock{blk.lo, lo, blk.id})
	}
	if hi < blk.hi {
		p.live = append(p.live, liveBlock{hi, blk.hi, blk.id})
	}
}

// freeRange frees an arbitrary range: it succeeds exactly when all of it
// is allocated.
func (p *propertyState) freeRange() {
	t, m, rng, gb, step := p.t, p.m, p.rng, p.gb, p.step
	if m.capG() == 0 {
		return
	}
	lo := rng.Int64N(m.capG())
	hi := lo + 1 + rng.Int64N(min(m.capG()-lo, 8))
	err := p.a.Free(lo*gb, (hi-lo)*gb)
	if m.allAllocated(lo, hi) {
		if err != nil {
			t.Fatalf("step %d: free of allocated [%d, %d): %v", step, lo, hi, err)
		}
		for g := lo; g < hi; g++ {
			m.owner[g] = 0
		}
		p.live = splitLive(p.live, lo, hi)
	} else {
		if !errors.Is(err, ErrNotAllocated) {
			t.Fatalf("step %d: free of partly free [%d, %d): %v", step, lo, hi, err)
		}
		p.unchanged("free")
	}
}

// badInput calls Free and Alloc with bad arguments.
func (p *propertyState) badInput() {
	a, gb, step := p.a, p.gb, p.step
	c := p.m.capG() * gb
	bad := []struct {
		off, size int64
		want      error
	}{
		{gb / 2, gb, ErrMisaligned},
		{0, gb + 1, ErrMisaligned},
		{-gb, gb, ErrOutOfRange},
		{c, gb, ErrOutOfRange},
		{c - gb, 2 * gb, ErrOutOfRange},
		{0, 0, ErrInvalidSize},
		{0, -gb, ErrInvalidSize},
		{1 << 62, 1 << 62, ErrOutOfRange},
	}
	for _, x := range bad {
		if err := a.Free(x.off, x.size); !errors.Is(err, x.want) {
			p.t.Fatalf("step %d: Free(%d, %d) = %v, want %v", step, x.off, x.size, err, x.want)
		}
	}
	for _, sz := range []int64{0, -1, 1 << 62} {
		if _, err := a.Alloc(sz); !errors.Is(err, ErrInvalidSize) {
			p.t.Fatalf("step %d: Alloc(%d) = %v", step, sz, err)
		}
	}
	p.unchanged("bad input")
}

// query checks IsAllocated and FreeRegionAt on byte ranges.
func (p *propertyState) query() {
	t, a, m, gb, step := p.t, p.a, p.m, p.gb, p.step
	c := m.capG() * gb
	if c == 0 {
		return
	}
	off := p.rng.Int64N(c)
	size := 1 + p.rng.Int64N(min(c-off, 4*gb))
	want := m.allAllocated(off/gb, (off+size+gb-1)/gb)
	if got := a.IsAllocated(off, size); got != want {
		t.Fatalf("step %d: IsAllocated(%d, %d) = %v, want %v", step, off, size, got, want)
	}
	// FreeRegionAt: the maximal run of free granules around off.
	wantR, wantOK := Block{}, m.owner[off/gb] == 0
	if wantOK {
		lo, hi := off/gb, off/gb+1
		for lo > 0 && m.owner[lo-1] == 0 {
			lo--
		}
		for hi < m.capG() && m.owner[hi] == 0 {
			hi++
		}
		wantR = Block{Offset: lo * gb, Size: (hi - lo) * gb}
	}
	if got, ok := a.FreeRegionAt(off); ok != wantOK || got != wantR {
		t.Fatalf("step %d: FreeRegionAt(%d) = %v, %v, want %v, %v", step, off, got, ok, wantR, wantOK)
	}
	for _, o := range []int64{-1, c, c + gb} {
		if _, ok := a.FreeRegionAt(o); ok {
			t.Fatalf("step %d: FreeRegionAt(%d) outside the arena reported a region", step, o)
		}
	}
}

// splitLive removes [lo, hi) from the live blocks, keeping what remains.
func splitLive(live []liveBlock, lo, hi int64) []liveBlock {
	var out []liveBlock
	for _, b := range live {
		if b.hi <= lo || hi <= b.lo {
			out = append(out, b)
			continue
		}
		if b.lo < lo {
			out = append(out, liveBlock{b.lo, lo, b.id})
		}
		if hi < b.hi {
			out = append(out, liveBlock{hi, b.hi, b.id})
		}
	}
	return out
}

func TestPropertyAgainstModel(t *testing.T) {
	steps := 1500
	if testing.Short() {
		steps = 400
	}
	configs := []Config{
		{Capacity: 64 * 256},
		{Capacity: 300 * 64, Granule: 64, Fit: FitFast},
		{Capacity: 300 * 64, Granule: 64, Fit: FitLean},
		{Capacity: 5000 * 256, Fit: FitFast},
		{Capacity: 5000 * 256, Fit: FitLean},
		{Capacity: 777 * 16, Granule: 16, Backing: make([]byte, 777*16+5)},
		{Capacity: 4500 * 256, Backing: make([]byte, 4500*256), Fit: FitFast},
		{Unbounded: true},
		{Unbounded: true, Capacity: 100 * 256, Fit: FitFast},
		{Unbounded: true, Capacity: 3 * 4096, Granule: 4096, Fit: FitLean},
	}
	for i, cfg := range configs {
		for seed := uint64(1); seed <= 3; seed++ {
			name := fmt.Sprintf("cfg%d/%s/unbounded=%v/seed%d", i, cfg.Fit.resolve(), cfg.Unbounded, seed)
			t.Run(name, func(t *testing.T) { propertyRun(t, cfg, seed, steps) })
		}
	}
}
