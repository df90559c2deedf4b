// Package tracegen writes random valid subarena-trace/v1 documents for the property
// tests of trace and trace/replay. It tracks what the trace has brought into being byte
// by byte, so that every step it emits is valid, and it needs nothing from the trace
// package: the tests read its documents with trace.Parse.
package tracegen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/subarena/subarena/strided/stridedtest"
)

// kind is a step's kind, named as the document's key.
type kind string

const (
	kindAlloc    kind = "alloc"
	kindExternal kind = "external"
	kindView     kind = "view"
	kindOp       kind = "op"
	kindRelease  kind = "release"
	kindSync     kind = "sync"
)

// doc is the trace being generated.
type doc struct {
	Name    string
	Granule int64
	Engines []string
	Steps   []step
}

// step is one step, with the fields of trace.Step the generator sets.
type step struct {
	Kind                 kind
	Name, Engine, Of     string
	Size, Offset, Elem   int64
	Shape, Strides       []int64
	Reads, Writes, Waits []string
	Cost                 int64
	Inplace              bool
}

// json renders d as trace.Write would: every default written out.
func (d *doc) json() []byte {
	var b strings.Builder
	b.WriteString("{\n  \"format\": \"subarena-trace/v1\",\n")
	b.WriteString("  \"name\": " + strconv.Quote(d.Name) + ",\n")
	b.WriteString("  \"granule\": " + strconv.FormatInt(d.Granule, 10) + ",\n")
	b.WriteString("  \"engines\": " + strs(d.Engines) + ",\n  \"steps\": [")
	for i, s := range d.Steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    " + s.json())
	}
	if len(d.Steps) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]\n}\n")
	return []byte(b.String())
}

func (s step) json() string {
	var b strings.Builder
	b.WriteString("{" + strconv.Quote(string(s.Kind)) + ": " + strconv.Quote(s.Name))
	kv := func(k, v string) { b.WriteString(", " + strconv.Quote(k) + ": " + v) }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch s.Kind {
	case kindAlloc:
		kv("size", num(s.Size))
		kv("engine", strconv.Quote(s.Engine))
		if s.Shape != nil {
			kv("shape", ints(s.Shape))
			kv("elem", num(s.Elem))
		}
	case kindExternal:
		kv("size", num(s.Size))
	case kindView:
		kv("of", strconv.Quote(s.Of))
		kv("offset", num(s.Offset))
		kv("shape", ints(s.Shape))
		kv("strides", ints(s.Strides))
		kv("elem", num(s.Elem))
	case kindOp:
		kv("engine", strconv.Quote(s.Engine))
		if len(s.Reads) > 0 {
			kv("reads", strs(s.Reads))
		}
		if len(s.Writes) > 0 {
			kv("writes", strs(s.Writes))
		}
		if len(s.Waits) > 0 {
			kv("waits", strs(s.Waits))
		}
		kv("cost", num(s.Cost))
		if s.Inplace {
			kv("inplace", "true")
		}
	}
	b.WriteString("}")
	return b.String()
}

func ints(v []int64) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func strs(v []string) string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(out, ", ") + "]"
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
				g.t.Steps = append(g.t.Steps, step{Kind: kindSync, Name: g.ops[rng.IntN(len(g.ops))]})
			}
		}
	}
	// Release most of what is left, keeping a buffer or two held to the end.
	for _, n := range append([]string(nil), g.names...) {
		if g.bufOf[n] == n && !g.external[n] && !g.released[n] && rng.IntN(4) > 0 {
			g.t.Steps = append(g.t.Steps, step{Kind: kindRelease, Name: n})
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
	s := step{Kind: kindAlloc, Name: name, Size: size, Engine: g.engine()}
	if external {
		s = step{Kind: kindExternal, Name: name, Size: size}
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
	g.t.Steps = append(g.t.Steps, step{Kind: kindView, Name: name, Of: of, Offset: abs - g.offset[of],
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
// every element (strided/stridedtest).
func enumerate(off int64, shape, strides []int64, elem, size int64) []bool {
	cov := make([]bool, size)
	stridedtest.Bytes(off, shape, strides, elem, func(b int64) { cov[b] = true })
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
	s := step{Kind: kindOp, Name: name, Engine: g.engine(), Cost: 1 + g.rng.Int64N(5), Inplace: g.rng.IntN(2) == 0}
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
	g.t.Steps = append(g.t.Steps, step{Kind: kindRelease, Name: n})
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
