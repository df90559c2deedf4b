package fuzz

import (
	"slices"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// GenConfig shapes the programs Generate makes. Percentages are the chance,
// per host step, of a step of that kind (the rest are ops), or per op of
// the feature.
type GenConfig struct {
	Ops                    int     // ops per program
	MinEngines, MaxEngines int     // engines, in [1, MaxEngines]
	Granules               []int64 // the arena granule is drawn from these
	MaxBufBytes            int64   // largest buffer
	// CapacityBufs: the arena holds about this many of the largest buffers
	// (drawn in [CapacityBufs, 2·CapacityBufs)), so bytes are reused a lot.
	// Capacity, when positive, fixes the arena size instead (a multiple of
	// every granule).
	CapacityBufs int
	Capacity     int64
	MaxViewDepth int // builders chained on one view
	MaxUses      int // views per op

	Release, Discard, Claim, Reserve, Cancel, HostSync int // % of host steps
	Donate                                             int // % of ops done in place and donated
	ExtraWait                                          int // % of ops with a random extra cross-engine wait
	// ForgetOrder: % of buffers allocated at the point of a random engine
	// whose uses are not made to wait for that point (the Allocator must
	// reject such a use with ErrUnordered when the bytes came fenced and
	// the op is not ordered after the fence, and accept it otherwise).
	// ForgetReserved: % of uses registered through a reservation that are
	// not made to wait for their buffer's allocation point.
	ForgetOrder, ForgetReserved int
}

// DefaultConfig is the random mode's program shape: 24 ops on 2–4 engines,
// every feature on.
func DefaultConfig() GenConfig {
	return GenConfig{
		Ops: 24, MinEngines: 2, MaxEngines: 4,
		Granules: []int64{1, 8, 16, 32}, MaxBufBytes: 64, CapacityBufs: 3,
		MaxViewDepth: 3, MaxUses: 3,
		Release: 8, Discard: 5, Claim: 3, Reserve: 3, Cancel: 2, HostSync: 4,
		Donate: 8, ExtraWait: 15, ForgetOrder: 8, ForgetReserved: 30,
	}
}

// SmallConfig is the exhaustive mode's program shape: 6 ops on 2–3 engines
// and few extra host steps, so every interleaving can be enumerated.
func SmallConfig() GenConfig {
	c := DefaultConfig()
	c.Ops, c.MinEngines, c.MaxEngines = 6, 2, 3
	c.MaxUses = 2
	c.Release, c.Discard, c.Claim, c.Reserve, c.Cancel, c.HostSync = 4, 3, 2, 2, 1, 3
	return c
}

// genBuf is the generator's view of one buffer.
type genBuf struct {
	size     int64
	allocOp  int  // last op of the allocating engine at Alloc (order after it), -1 none
	forget   bool // uses are not ordered after the allocation point
	dead     []bool
	reserved []int // outstanding reservations covering each byte
	written  bool
	released bool
	views    []int
	charged  int64 // bytes counted against the live budget
	resv     int   // outstanding reservations
}

type generator struct {
	cfg    GenConfig
	src    Source
	p      *Program
	ord    ordering
	lin    []lineage
	hist   map[int]*history
	bufs   []*genBuf
	live   []int // held buffers
	lastOp [MaxEngines]int
	budget int64
	used   int64
	resv   []int // reservation -> view, -1 once used or cancelled
	needs  []int
}

// Generate returns a random well-formed program of cfg's shape drawing its
// decisions from src.
func Generate(src Source, cfg GenConfig) *Program {
	g := &generator{cfg: cfg, src: src, hist: map[int]*history{}}
	for e := range g.lastOp {
		g.lastOp[e] = -1
	}
	gr := cfg.Granules[src.Intn(len(cfg.Granules))]
	maxBuf := roundUp(cfg.MaxBufBytes, gr)
	capacity := maxBuf * int64(between(src, cfg.CapacityBufs, 2*cfg.CapacityBufs-1))
	if cfg.Capacity > 0 {
		capacity = cfg.Capacity
	}
	g.p = &Program{
		Engines:  between(src, cfg.MinEngines, cfg.MaxEngines),
		Capacity: capacity,
		Granule:  gr,
	}
	g.budget = capacity * 3 / 4
	for len(g.p.Ops) < cfg.Ops {
		r := src.Intn(100)
		switch {
		case r < cfg.Release:
			g.releaseSome()
		case r < cfg.Release+cfg.Discard:
			g.discard(false)
		case r < cfg.Release+cfg.Discard+cfg.Claim:
			g.discard(true)
		case r < cfg.Release+cfg.Discard+cfg.Claim+cfg.Reserve:
			g.reserve()
		case r < cfg.Release+cfg.Discard+cfg.Claim+cfg.Reserve+cfg.Cancel:
			g.cancel()
		case r < cfg.Release+cfg.Discard+cfg.Claim+cfg.Reserve+cfg.Cancel+cfg.HostSync:
			if n := len(g.p.Ops); n > 0 {
				op := src.Intn(n)
				g.p.Steps = append(g.p.Steps, Step{Kind: StepHostSync, Op: op})
				g.ord.host.join(&g.ord.clock[op])
			}
		default:
			g.op()
		}
	}
	for r, v := range g.resv {
		if v >= 0 {
			g.endReservation(r)
			g.p.Steps = append(g.p.Steps, Step{Kind: StepCancel, Res: r})
		}
	}
	for len(g.live) > 0 {
		g.release(g.live[len(g.live)-1])
	}
	return g.p
}

func roundUp(n, g int64) int64 { return ranges.Granule(g).Up(n) }

// alloc emits an allocation for a writer on engine e and returns the buffer.
func (g *generator) alloc(e int) int {
	size := int64(between(g.src, 1, int(g.cfg.MaxBufBytes)))
	if chance(g.src, 40) {
		size = roundUp(size, 4)
	}
	for g.used+roundUp(size, g.p.Granule) > g.budget && len(g.live) > 0 {
		g.release(g.live[g.src.Intn(len(g.live))])
	}
	for size > 1 && g.used+roundUp(size, g.p.Granule) > g.budget {
		size /= 2
	}
	forget := chance(g.src, g.cfg.ForgetOrder)
	if forget {
		e = g.src.Intn(g.p.Engines)
	}
	b := len(g.p.Bufs)
	g.p.Bufs = append(g.p.Bufs, BufDef{Size: size, Engine: e, From: -1, Op: -1})
	g.p.Steps = append(g.p.Steps, Step{Kind: StepAlloc, Buf: b, Size: size, Engine: e})
	g.lin = append(g.lin, lineage{root: b})
	g.hist[b] = newHistory(size)
	gb := &genBuf{size: size, allocOp: g.lastOp[e], forget: forget, dead: make([]bool, size), reserved: make([]int, size), charged: roundUp(size, g.p.Granule)}
	g.used += gb.charged
	g.bufs = append(g.bufs, gb)
	g.live = append(g.live, b)
	return b
}

// release emits Release(b) and drops b from the live set.
func (g *generator) release(b int) {
	i := slices.Index(g.live, b)
	if i < 0 {
		return
	}
	g.live = slices.Delete(g.live, i, i+1)
	gb := g.bufs[b]
	gb.released = true
	if gb.resv == 0 {
		g.used -= gb.charged
	}
	g.p.Steps = append(g.p.Steps, Step{Kind: StepRelease, Buf: b})
}

func (g *generator) releaseSome() {
	if len(g.live) > 0 {
		g.release(g.live[g.src.Intn(len(g.live))])
	}
}

// pickLive returns a held buffer with live bytes, preferring written ones,
// or -1.
func (g *generator) pickLive(preferWritten bool) int {
	if len(g.live) == 0 {
		return -1
	}
	for try := 0; try < 4; try++ {
		b := g.live[g.src.Intn(len(g.live))]
		if !preferWritten || g.bufs[b].written {
			return b
		}
	}
	return g.live[g.src.Intn(len(g.live))]
}

// op emits one op on a random engine: its outputs' allocations, the
// submit with every wait race-freedom needs, and maybe a donation and
// releases after it.
func (g *generator) op() {
	e := g.src.Intn(g.p.Engines)
	var uses []Use
	add := func(v int, acc subarena.Access, res int) bool {
		if v < 0 || len(uses) >= g.cfg.MaxUses {
			return false
		}
		uses = append(uses, Use{View: v, Access: acc, Res: res})
		return true
	}
	// The output first: allocating it may release buffers to stay within
	// the budget, and inputs are picked among what is still held.
	if b := g.pickLive(false); b >= 0 && chance(g.src, 30) {
		add(g.view(b, false), subarena.Write, -1)
	} else {
		b := g.alloc(e)
		v := g.wholeView(b)
		if chance(g.src, 40) {
			v = g.view(b, false)
		}
		add(v, subarena.Write, -1)
	}
	donate := -1
	if chance(g.src, g.cfg.Donate) {
		if b := g.pickLive(true); b >= 0 {
			if add(g.denseView(b), subarena.ReadWrite, -1) {
				donate = len(uses) - 1
			}
		}
	}
	for r, v := range g.resv {
		if v >= 0 && len(uses) < g.cfg.MaxUses && chance(g.src, 50) {
			acc := subarena.Write
			if chance(g.src, 30) {
				acc = subarena.ReadWrite
			}
			add(v, acc, r)
			g.endReservation(r)
		}
	}
	for k := between(g.src, 0, 2); k > 0; k-- {
		if b := g.pickLive(true); b >= 0 {
			acc := subarena.Read
			if chance(g.src, 15) {
				acc = subarena.ReadWrite
			}
			add(g.view(b, false), acc, -1)
		}
	}
	if len(uses) == 0 {
		return
	}
	op := g.submit(e, uses)
	if donate >= 0 {
		g.donate(op, uses[donate].View)
	}
	for _, u := range uses {
		b := g.p.Views[u.View].Buf
		if u.Res < 0 && !g.bufs[b].released && chance(g.src, 25) {
			g.release(b)
		}
	}
}

// submit computes the op's waits — every earlier op it conflicts with that
// does not already happen-before it, and the allocation points of its
// buffers — emits the step and records the op.
func (g *generator) submit(e int, uses []Use) int {
	op := len(g.p.Ops)
	c := g.ord.point(e)
	g.needs = g.needs[:0]
	for _, u := range uses {
		b := g.p.Views[u.View].Buf
		l := g.lin[b]
		for _, i := range g.p.Views[u.View].Bytes {
			g.needs = g.hist[l.root].needs(g.needs, l.off+int64(i), u.Access)
		}
		forget := g.bufs[b].forget
		if u.Res >= 0 {
			forget = forget || chance(g.src, g.cfg.ForgetReserved)
		}
		if a := g.bufs[b].allocOp; a >= 0 && !forget {
			g.needs = append(g.needs, a)
		}
	}
	if chance(g.src, g.cfg.ExtraWait) && op > 0 {
		g.needs = append(g.needs, g.src.Intn(op))
	}
	slices.Sort(g.needs)
	var waits []int
	for i := len(g.needs) - 1; i >= 0; i-- {
		n := g.needs[i]
		if (i+1 < len(g.needs) && g.needs[i+1] == n) || g.ord.before(n, &c) {
			continue
		}
		waits = append(waits, n)
		c.join(&g.ord.clock[n])
	}
	slices.Sort(waits)
	step := len(g.p.Steps)
	g.p.Steps = append(g.p.Steps, Step{Kind: StepSubmit, Op: op, Engine: e, Waits: waits, Uses: uses})
	g.p.Ops = append(g.p.Ops, OpDef{Engine: e, Step: step})
	g.ord.submit(e, waits)
	g.lastOp[e] = op
	for _, acc := range []subarena.Access{subarena.Read, subarena.Write} {
		for _, u := range uses {
			if u.Access&acc == 0 {
				continue
			}
			b := g.p.Views[u.View].Buf
			if acc == subarena.Write {
				g.bufs[b].written = true
			}
			l := g.lin[b]
			for _, i := range g.p.Views[u.View].Bytes {
				g.hist[l.root].record(op, l.off+int64(i), acc)
			}
		}
	}
	return op
}

// donate emits Donate(v, op): v's bytes leave their buffer and become a
// new one.
func (g *generator) donate(op, v int) {
	src := g.p.Views[v].Buf
	sb := g.bufs[src]
	if sb.released {
		return
	}
	bytes := g.p.Views[v].Bytes
	for _, i := range bytes {
		if sb.dead[i] || sb.reserved[i] > 0 {
			return
		}
	}
	for _, i := range bytes {
		sb.dead[i] = true
	}
	b := len(g.p.Bufs)
	size := int64(len(bytes))
	g.p.Bufs = append(g.p.Bufs, BufDef{Size: size, Engine: -1, From: v, Op: op})
	g.p.Steps = append(g.p.Steps, Step{Kind: StepDonate, Buf: b, View: v, Op: op})
	l := g.lin[src]
	g.lin = append(g.lin, lineage{root: l.root, off: l.off + int64(bytes[0])})
	gb := &genBuf{size: size, allocOp: -1, dead: make([]bool, size), reserved: make([]int, size), written: true, charged: roundUp(size, g.p.Granule) + g.p.Granule}
	g.used += gb.charged
	g.bufs = append(g.bufs, gb)
	g.live = append(g.live, b)
	g.retireIfDead(src)
}

// retireIfDead releases b once none of its bytes may be touched again.
func (g *generator) retireIfDead(b int) {
	if !slices.Contains(g.bufs[b].dead, false) {
		g.release(b)
	}
}

// discard emits Discard (or Claim) of a view of a held buffer whose bytes
// are live and not reserved.
func (g *generator) discard(claim bool) {
	b := g.pickLive(false)
	if b < 0 {
		return
	}
	v := g.view(b, true)
	if v < 0 {
		return
	}
	if claim {
		g.p.Steps = append(g.p.Steps, Step{Kind: StepClaim, View: v, Commit: chance(g.src, 60)})
	} else {
		g.p.Steps = append(g.p.Steps, Step{Kind: StepDiscard, View: v})
	}
	for _, i := range g.p.Views[v].Bytes {
		g.bufs[b].dead[i] = true
	}
	g.retireIfDead(b)
}

func (g *generator) reserve() {
	outstanding := 0
	for _, v := range g.resv {
		if v >= 0 {
			outstanding++
		}
	}
	b := g.pickLive(false)
	if b < 0 || outstanding >= 2 {
		return
	}
	v := g.view(b, false)
	if v < 0 {
		return
	}
	r := len(g.resv)
	g.resv = append(g.resv, v)
	g.p.Reservations++
	g.p.Steps = append(g.p.Steps, Step{Kind: StepReserve, View: v, Res: r})
	for _, i := range g.p.Views[v].Bytes {
		g.bufs[b].reserved[i]++
	}
	g.bufs[b].resv++
}

func (g *generator) cancel() {
	for r, v := range g.resv {
		if v >= 0 && chance(g.src, 50) {
			g.endReservation(r)
			g.p.Steps = append(g.p.Steps, Step{Kind: StepCancel, Res: r})
			return
		}
	}
}

// endReservation forgets reservation r (used or cancelled).
func (g *generator) endReservation(r int) {
	v := g.resv[r]
	g.resv[r] = -1
	b := g.p.Views[v].Buf
	gb := g.bufs[b]
	for _, i := range g.p.Views[v].Bytes {
		gb.reserved[i]--
	}
	gb.resv--
	if gb.resv == 0 && gb.released {
		g.used -= gb.charged
	}
}

// addView records a view and returns its index, or -1 when the layout is
// not usable (empty, too many elements).
func (g *generator) addView(b, parent int, op ViewOp, l strided.Layout) int {
	bytes, ok := oracleBytes(l)
	if !ok || len(bytes) == 0 {
		return -1
	}
	v := len(g.p.Views)
	g.p.Views = append(g.p.Views, ViewDef{Buf: b, Parent: parent, Op: op, Layout: l, Bytes: bytes})
	g.bufs[b].views = append(g.bufs[b].views, v)
	return v
}

// usable reports whether every byte of v is live (and, for discards, not
// reserved).
func (g *generator) usable(v int, forDiscard bool) bool {
	gb := g.bufs[g.p.Views[v].Buf]
	for _, i := range g.p.Views[v].Bytes {
		if gb.dead[i] || (forDiscard && gb.reserved[i] > 0) {
			return false
		}
	}
	return true
}

func (g *generator) wholeView(b int) int {
	for _, v := range g.bufs[b].views {
		if g.p.Views[v].Op.Kind == ViewWhole {
			return v
		}
	}
	return g.addView(b, -1, ViewOp{Kind: ViewWhole}, strided.Bytes(0, g.bufs[b].size))
}

// view returns a usable view of b — an existing one or a new chain — or -1.
func (g *generator) view(b int, forDiscard bool) int {
	gb := g.bufs[b]
	for try := 0; try < 8; try++ {
		var v int
		if len(gb.views) > 0 && chance(g.src, 30) {
			v = gb.views[g.src.Intn(len(gb.views))]
			if chance(g.src, 50) {
				v = g.chain(b, v)
			}
		} else {
			v = g.chain(b, -1)
		}
		if v >= 0 && g.usable(v, forDiscard) {
			return v
		}
	}
	return g.denseViewFor(b, forDiscard)
}

// denseView returns a usable one-run view of b (a slice of the whole), or -1.
func (g *generator) denseView(b int) int { return g.denseViewFor(b, true) }

func (g *generator) denseViewFor(b int, forDiscard bool) int {
	gb := g.bufs[b]
	var runs [][2]int64
	for i := int64(0); i < gb.size; {
		if gb.dead[i] || (forDiscard && gb.reserved[i] > 0) {
			i++
			continue
		}
		j := i
		for j < gb.size && !gb.dead[j] && !(forDiscard && gb.reserved[j] > 0) {
			j++
		}
		runs = append(runs, [2]int64{i, j})
		i = j
	}
	if len(runs) == 0 {
		return -1
	}
	r := runs[g.src.Intn(len(runs))]
	lo := r[0] + int64(g.src.Intn(int(r[1]-r[0])))
	hi := lo + 1 + int64(g.src.Intn(int(r[1]-lo)))
	w := g.wholeView(b)
	op := ViewOp{Kind: ViewSlice, Dim: 0, Start: lo, Stop: hi, Step: 1}
	l, err := op.layout(g.p.Views[w].Layout, gb.size)
	if err != nil {
		return -1
	}
	return g.addView(b, w, op, l)
}

// StressConfig is the shape of the goroutine stress test's program: many
// ops on eight engines, no uses left unordered (ops may run before the host
// has registered their uses, so a rejected use would be too late).
func StressConfig() GenConfig {
	c := DefaultConfig()
	c.Ops, c.MinEngines, c.MaxEngines = 250, 8, 8
	c.Granules, c.MaxBufBytes, c.Capacity = []int64{16}, 64, 2048
	c.ForgetOrder, c.ForgetReserved = 0, 0
	return c
}
