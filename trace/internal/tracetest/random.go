package tracetest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// The kinds of steps, named as the document's keys.
const (
	kindAlloc    = "alloc"
	kindExternal = "external"
	kindView     = "view"
	kindOp       = "op"
	kindRelease  = "release"
	kindSync     = "sync"
)

// doc is the trace being generated.
type doc struct {
	Name    string
	Granule int64
	Engines []string
	Steps   []tracejson.Step
}

// json renders d as trace.Write would: every default written out.
func (d *doc) json() []byte {
	var b bytes.Buffer
	h := tracejson.Header{Format: "subarena-trace/v1", Name: d.Name, Granule: d.Granule, Engines: d.Engines}
	_ = tracejson.Write(&b, h, len(d.Steps), func(i int) string { return d.Steps[i].JSON() }) // a bytes.Buffer never fails
	return b.Bytes()
}

// genState tracks what a random trace has brought into being, byte by byte, so the
// generator only emits valid steps.
type genState struct {
	rng      *rand.Rand
	t        *doc
	names    []string          // live data names
	bufOf    map[string]string // data name -> buffer name
	parent   map[string]string // view name -> the name it was taken of
	offset   map[string]int64  // data name -> layout offset relative to its buffer
	bytes    map[string][]bool // data name -> covered bytes of its buffer
	size     map[string]int64  // buffer name -> size
	external map[string]bool
	released map[string]bool   // buffers released, views discarded
	dropped  map[string][]bool // buffer -> bytes discarded
	ops      []string
	nbuf     int
}

// Random returns a valid random subarena-trace/v1 document of at least steps steps: 1-3
// engines, small buffers, strided views (negative and zero strides included), ops with
// waits, releases, discards and syncs. The same rng state gives the same document.
func Random(rng *rand.Rand, steps int) []byte {
	g := &genState{rng: rng, bufOf: map[string]string{}, parent: map[string]string{}, offset: map[string]int64{}, bytes: map[string][]bool{},
		size: map[string]int64{}, external: map[string]bool{}, released: map[string]bool{}, dropped: map[string][]bool{}}
	ne := 1 + rng.IntN(3)
	g.t = &doc{Name: "random", Granule: []int64{1, 2, 4, 8, 16}[rng.IntN(5)]}
	for i := 0; i < ne; i++ {
		g.t.Engines = append(g.t.Engines, fmt.Sprintf("e%d", i))
	}
	for len(g.t.Steps) < steps {
		switch k := rng.IntN(20); {
		case k < 4:
			g.alloc(false)
		case k < 5:
			g.alloc(true)
		case k < 9:
			g.view()
		case k < 15:
			g.op()
		case k < 18:
			g.release()
		default:
			if len(g.ops) > 0 {
				g.t.Steps = append(g.t.Steps, tracejson.Step{Kind: kindSync, Name: g.ops[rng.IntN(len(g.ops))]})
			}
		}
	}
	// Release most of what is left, keeping a buffer or two held to the end.
	for _, n := range append([]string(nil), g.names...) {
		if g.bufOf[n] == n && !g.external[n] && !g.released[n] && rng.IntN(4) > 0 {
			g.t.Steps = append(g.t.Steps, tracejson.Step{Kind: kindRelease, Name: n})
			g.released[n] = true
		}
	}
	return g.t.json()
}

func (g *genState) engine() string { return g.t.Engines[g.rng.IntN(len(g.t.Engines))] }

func (g *genState) alloc(external bool) {
	name := fmt.Sprintf("b%d", g.nbuf)
	g.nbuf++
	size := 1 + g.rng.Int64N(64)
	s := tracejson.Step{Kind: kindAlloc, Name: name, Size: size, Engine: g.engine()}
	if external {
		s = tracejson.Step{Kind: kindExternal, Name: name, Size: size}
		g.external[name] = true
	} else if g.rng.IntN(3) == 0 && size%4 == 0 {
		s.Shape, s.Elem = []int64{size / 4}, 4
	}
	g.t.Steps = append(g.t.Steps, s)
	g.names = append(g.names, name)
	g.bufOf[name], g.offset[name], g.size[name] = name, 0, size
	all := make([]bool, size)
	for i := range all {
		all[i] = true
	}
	g.bytes[name] = all
	g.dropped[name] = make([]bool, size)
}

// live reports whether data name n may still be named.
func (g *genState) live(n string) bool {
	for ; n != ""; n = g.parent[n] {
		if g.released[n] {
			return false
		}
	}
	return true
}

func (g *genState) pick() (string, bool) {
	var cand []string
	for _, n := range g.names {
		if g.live(n) {
			cand = append(cand, n)
		}
	}
	if len(cand) == 0 {
		return "", false
	}
	return cand[g.rng.IntN(len(cand))], true
}

func (g *genState) view() {
	of, ok := g.pick()
	if !ok {
		return
	}
	buf := g.bufOf[of]
	size := g.size[buf]
	elem := 1 + g.rng.Int64N(4)
	nd := g.rng.IntN(3)
	shape := make([]int64, nd)
	strides := make([]int64, nd)
	lo, hi := int64(0), elem // bytes relative to element 0: [lo, hi)
	empty := false
	for d := 0; d < nd; d++ {
		shape[d] = g.rng.Int64N(4)
		strides[d] = g.rng.Int64N(17) - 8
		if shape[d] == 0 {
			empty = true
		}
		span := strides[d] * max(shape[d]-1, 0)
		if span < 0 {
			lo += span
		} else {
			hi += span
		}
	}
	// Element 0 at abs must satisfy abs+lo >= 0 and abs+hi <= size.
	var abs int64
	if !empty {
		if hi-lo > size {
			return
		}
		abs = -lo + g.rng.Int64N(size-(hi-lo)+1)
	} else {
		abs = g.rng.Int64N(size + 1)
	}
	name := fmt.Sprintf("v%d", len(g.t.Steps))
	g.t.Steps = append(g.t.Steps, tracejson.Step{Kind: kindView, Name: name, Of: of, Offset: abs - g.offset[of],
		Shape: shape, Strides: strides, Elem: elem})
	g.names = append(g.names, name)
	g.bufOf[name], g.offset[name] = buf, abs
	if of != buf {
		g.parent[name] = of
	} else {
		g.parent[name] = buf
	}
	g.bytes[name] = enumerate(abs, shape, strides, elem, size)
}

// enumerate returns the bytes of a buffer of size bytes that a layout covers, by walking
// every element (internal/testutil's layout oracle).
func enumerate(off int64, shape, strides []int64, elem, size int64) []bool {
	cov := make([]bool, size)
	testutil.LayoutBytes(off, shape, strides, elem, func(b int64) { cov[b] = true })
	return cov
}

func (g *genState) touchesDropped(n string) bool {
	d := g.dropped[g.bufOf[n]]
	for i, c := range g.bytes[n] {
		if c && d[i] {
			return true
		}
	}
	return false
}

func (g *genState) op() {
	name := fmt.Sprintf("o%d", len(g.t.Steps))
	s := tracejson.Step{Kind: kindOp, Name: name, Engine: g.engine(), Cost: 1 + g.rng.Int64N(5), InPlace: g.rng.IntN(2) == 0}
	for i := g.rng.IntN(3); i > 0; i-- {
		if n, ok := g.pick(); ok && !g.touchesDropped(n) && !slices.Contains(s.Reads, n) {
			s.Reads = append(s.Reads, n)
		}
	}
	for i := g.rng.IntN(3); i > 0; i-- {
		if n, ok := g.pick(); ok && !g.touchesDropped(n) && !slices.Contains(s.Writes, n) {
			s.Writes = append(s.Writes, n)
		}
	}
	for i := g.rng.IntN(3); i > 0 && len(g.ops) > 0; i-- {
		w := g.ops[g.rng.IntN(len(g.ops))]
		if !slices.Contains(s.Waits, w) {
			s.Waits = append(s.Waits, w)
		}
	}
	g.t.Steps = append(g.t.Steps, s)
	g.ops = append(g.ops, name)
}

func (g *genState) release() {
	n, ok := g.pick()
	if !ok || g.external[g.bufOf[n]] {
		return
	}
	g.t.Steps = append(g.t.Steps, tracejson.Step{Kind: kindRelease, Name: n})
	g.released[n] = true
	if g.bufOf[n] != n {
		d := g.dropped[g.bufOf[n]]
		for i, c := range g.bytes[n] {
			if c {
				d[i] = true
			}
		}
	}
}
