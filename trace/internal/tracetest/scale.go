package tracetest

import (
	"strconv"
	"strings"

	"github.com/subarena/subarena/trace/internal/tracejson"
)

// scaleDoc accumulates one trace document.
type scaleDoc struct {
	b     strings.Builder
	steps int
}

func newScaleDoc(name string, granule int64, engines ...string) *scaleDoc {
	d := &scaleDoc{}
	d.b.WriteString(`{"format": "subarena-trace/v1", "name": `)
	d.b.WriteString(strconv.Quote(name))
	d.b.WriteString(`, "granule": `)
	d.b.WriteString(strconv.FormatInt(granule, 10))
	d.b.WriteString(`, "engines": ` + tracejson.Strings(engines))
	d.b.WriteString(",\n \"steps\": [\n")
	return d
}

func (d *scaleDoc) step(s string) {
	if d.steps > 0 {
		d.b.WriteString(",\n")
	}
	d.b.WriteString("  ")
	d.b.WriteString(s)
	d.steps++
}

func (d *scaleDoc) bytes() []byte {
	d.b.WriteString("]}\n")
	return []byte(d.b.String())
}

func q(s string) string           { return strconv.Quote(s) }
func n(x int64) string            { return strconv.FormatInt(x, 10) }
func ni(x int) string             { return strconv.Itoa(x) }
func name(p string, i int) string { return p + strconv.Itoa(i) }

func (d *scaleDoc) alloc(b string, size int64, engine string) {
	d.step(`{"alloc": ` + q(b) + `, "size": ` + n(size) + `, "engine": ` + q(engine) + `}`)
}

func (d *scaleDoc) view(v, of string, offset int64, shape, strides []int64, elem int64) {
	d.step(`{"view": ` + q(v) + `, "of": ` + q(of) + `, "offset": ` + n(offset) + `, "shape": ` + tracejson.Ints(shape) +
		`, "strides": ` + tracejson.Ints(strides) + `, "elem": ` + n(elem) + `}`)
}

func (d *scaleDoc) op(o, engine string, reads, writes, waits []string, cost int64) {
	s := `{"op": ` + q(o) + `, "engine": ` + q(engine)
	if len(reads) > 0 {
		s += `, "reads": ` + tracejson.Strings(reads)
	}
	if len(writes) > 0 {
		s += `, "writes": ` + tracejson.Strings(writes)
	}
	if len(waits) > 0 {
		s += `, "waits": ` + tracejson.Strings(waits)
	}
	d.step(s + `, "cost": ` + n(cost) + `}`)
}

func (d *scaleDoc) release(x string) { d.step(`{"release": ` + q(x) + `}`) }
func (d *scaleDoc) sync(o string)    { d.step(`{"sync": ` + q(o) + `}`) }

func engines(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = "e" + strconv.Itoa(i)
	}
	return out
}

// LoopSteps is the number of steps Loop writes per iteration.
const LoopSteps = 9

// Loop writes iters iterations of a producer/consumer loop over the given number of
// engines (1 or more): each allocates a buffer a_i on engine 0, writes it there, takes a
// view of its first half, which an op on engine 1 reads (waiting for the writer) into a
// new buffer b_i, releases a_i, reads b_i back on engine 0 (waiting for the reader), and
// releases b_i. With syncEvery > 0 the host syncs on the last op of every syncEvery-th
// iteration; with 0 it never syncs. Sizes cycle through a few granule multiples.
func Loop(iters, nEngines, syncEvery int) []byte {
	es := engines(max(nEngines, 1))
	d := newScaleDoc("scale-loop", 256, es...)
	other := es[len(es)-1]
	for i := range iters {
		a, h, b := name("a", i), name("h", i), name("b", i)
		p, c, r := name("p", i), name("c", i), name("r", i)
		size := int64(1024 + 256*(i%7))
		d.alloc(a, size, es[0])
		d.op(p, es[0], nil, []string{a}, nil, 2)
		d.view(h, a, 0, []int64{size / 8}, []int64{4}, 4)
		d.alloc(b, size/2, other)
		var waits []string
		if other != es[0] {
			waits = []string{p}
		}
		d.op(c, other, []string{h}, []string{b}, waits, 3)
		d.release(a)
		waits = nil
		if other != es[0] {
			waits = []string{c}
		}
		d.op(r, es[0], []string{b}, nil, waits, 1)
		if syncEvery > 0 && (i+1)%syncEvery == 0 {
			d.sync(r)
		} else {
			// Keep the step count per iteration fixed: a view of nothing changes nothing.
			d.view(name("z", i), b, 0, []int64{0}, []int64{4}, 4)
		}
		d.release(b)
	}
	return d.bytes()
}

// CopySteps is the number of steps CopyEngine writes per iteration (a sync, when there
// is one, comes on top).
const CopySteps = 5

// CopyEngine writes iters iterations of a compute engine handing data to a copy engine
// that nothing waits for: each allocates a buffer a_i on compute, writes it there, takes
// a view of its first half, which an op on copy reads (waiting for the writer), and
// releases a_i. With syncEvery > 0 the host syncs on the copy op of every syncEvery-th
// iteration; with 0 it never does, and every half a copy op read stays unordered before
// every later buffer: all of them conflict pairwise, the shape that made the planner's
// conflict pairs, and its memory, quadratic. Sizes cycle through a few granule
// multiples.
func CopyEngine(iters, syncEvery int) []byte {
	d := newScaleDoc("scale-copy", 256, "compute", "copy")
	for i := range iters {
		a, h, p, c := name("a", i), name("h", i), name("p", i), name("c", i)
		size := int64(1024 + 256*(i%7))
		d.alloc(a, size, "compute")
		d.op(p, "compute", nil, []string{a}, nil, 2)
		d.view(h, a, 0, []int64{size / 8}, []int64{4}, 4)
		d.op(c, "copy", []string{h}, nil, []string{p}, 3)
		d.release(a)
		if syncEvery > 0 && (i+1)%syncEvery == 0 {
			d.sync(c)
		}
	}
	return d.bytes()
}

// Views writes one buffer read through nViews views on alternating engines: a buffer of
// 32·(nViews+1) bytes written on engine 0, view j covering bytes [32j, 32j+64) (so
// neighbours overlap) read by op j on engine j mod 2 (the first op on engine 1 waits for
// the writer), view j-1 discarded after op j unless j is a multiple of 4 (so the buffer
// lets its bytes go in about 3/4·nViews pieces), then a join on engine 0 waiting for the
// last reader on engine 1, the buffer released, and a second buffer of the same size
// written and read on both engines, which takes the first one's bytes over.
func Views(nViews int) []byte {
	d := newScaleDoc("scale-views", 256, "e0", "e1")
	size := 32 * int64(nViews+1)
	d.alloc("B", size, "e0")
	d.op("w", "e0", nil, []string{"B"}, nil, 1)
	lastOn1 := "w"
	for j := range nViews {
		v := name("v", j)
		d.view(v, "B", 32*int64(j), []int64{16}, []int64{4}, 4)
		e := "e" + ni(j%2)
		var waits []string
		if j == 1 {
			waits = []string{"w"}
		}
		o := name("r", j)
		d.op(o, e, []string{v}, nil, waits, 1)
		if j%2 == 1 {
			lastOn1 = o
		}
		if j > 0 && j%4 != 0 {
			d.release(name("v", j-1)) // its bytes: no later view reaches those not in view j
		}
	}
	d.op("join", "e0", nil, nil, []string{lastOn1}, 1)
	d.release("B")
	d.alloc("C", size, "e0")
	d.op("wc", "e0", nil, []string{"C"}, nil, 1)
	d.op("rc", "e1", []string{"C"}, nil, []string{"wc"}, 1)
	d.release("C")
	return d.bytes()
}

// Fanin writes nBufs buffers of 256 bytes, each written by its own op on alternating
// engines, one op on engine 0 reading all of them (after the last writer on engine 1)
// into an output buffer, their release, and one buffer of all their bytes written on
// engine 1 after the reader, which takes their bytes over.
func Fanin(nBufs int) []byte {
	d := newScaleDoc("scale-fanin", 256, "e0", "e1")
	reads := make([]string, nBufs)
	last := ""
	for j := range nBufs {
		b := name("b", j)
		reads[j] = b
		e := "e" + ni(j%2)
		d.alloc(b, 256, e)
		o := name("w", j)
		d.op(o, e, nil, []string{b}, nil, 1)
		if j%2 == 1 {
			last = o
		}
	}
	var waits []string
	if last != "" {
		waits = []string{last}
	}
	d.alloc("out", 256, "e0")
	d.op("sum", "e0", reads, []string{"out"}, waits, 4)
	for _, b := range reads {
		d.release(b)
	}
	d.alloc("D", 256*int64(nBufs), "e1")
	d.op("wd", "e1", []string{"out"}, []string{"D"}, []string{"sum"}, 1)
	d.release("out")
	d.op("rd", "e0", []string{"D"}, nil, []string{"wd"}, 1)
	d.release("D")
	return d.bytes()
}

// Strided writes a two-engine trace around one buffer of 16·runs bytes whose even and odd
// 8-byte runs are two strided views (runs runs each): written on engine 0, the even view
// read on engine 1 into a second buffer and discarded, the odd view read on engine 0, the
// buffer released, then a third buffer written on engine 1 from the second, and read on
// engine 0.
func Strided(runs int) []byte {
	d := newScaleDoc("scale-strided", 256, "e0", "e1")
	r := int64(runs)
	d.alloc("B", 16*r, "e0")
	d.op("w", "e0", nil, []string{"B"}, nil, 2)
	d.view("even", "B", 0, []int64{r, 2}, []int64{16, 4}, 4)
	d.view("odd", "B", 8, []int64{r, 2}, []int64{16, 4}, 4)
	d.alloc("C", 8*r, "e1")
	d.op("r", "e1", []string{"even"}, []string{"C"}, []string{"w"}, 3)
	d.release("even")
	d.op("s", "e0", []string{"odd"}, nil, nil, 1)
	d.release("B")
	d.alloc("D", 16*r, "e1")
	d.op("t", "e1", []string{"C"}, []string{"D"}, []string{"s"}, 2)
	d.release("C")
	d.op("u", "e0", []string{"D"}, nil, []string{"t"}, 1)
	d.release("D")
	return d.bytes()
}

// Shape is one of the generated traces, by name, at a size parameter n.
type Shape struct {
	Name string
	Gen  func(n int) []byte
}

// Sizes are the sizes the scale tests and benchmarks generate each shape at, so that
// growth per 10x size shows in ns/op.
var Sizes = []int{1000, 10000, 100000}

// Shapes lists the generated large traces at a size parameter n (about n steps for the
// loops, n views, n buffers or n runs).
var Shapes = []Shape{
	{"loop2", func(n int) []byte { return Loop(n/LoopSteps, 2, 0) }},
	{"loop1", func(n int) []byte { return Loop(n/LoopSteps, 1, 0) }},
	{"loop2sync", func(n int) []byte { return Loop(n/LoopSteps, 2, 20) }},
	{"copy", func(n int) []byte { return CopyEngine(n/CopySteps, 0) }},
	{"copysync", func(n int) []byte { return CopyEngine(n/CopySteps, 100) }},
	{"views", Views},
	{"fanin", Fanin},
	{"strided", Strided},
}

// growthShape is a generated trace whose pinned bytes grow with its
// length, made at about n steps by Gen.
type growthShape struct {
	Name string
	Gen  func(n int) []byte
}

// growthShapes are the traces the replay and check growth benchmarks run
// at growthSizes: CopyEngine without syncs (every half a copy op reads
// stays pinned for every later compute writer) and Loop on two engines
// for comparison.
var growthShapes = []growthShape{
	{"copy", func(n int) []byte { return CopyEngine(n/CopySteps, 0) }},
	{"loop2", func(n int) []byte { return Loop(n/LoopSteps, 2, 0) }},
}

// growthSizes are the step counts the growth benchmarks run each shape at.
var growthSizes = []int{10000, 20000, 40000}
