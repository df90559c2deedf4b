package bench

import (
	"fmt"
	"math"

	"github.com/subarena/subarena/trace"
)

// builder appends steps to a trace in host program order. Every method
// records the step as given; the finished trace is validated once, by
// trace.Trace.Validate, in finish. Names are the caller's business: the
// generators build them from layer, step and sequence indices, so a name is
// never reused.
type builder struct {
	t   *trace.Trace
	rng SplitMix64
	// jitter is the relative spread of op costs (0.1: ±10%), drawn from rng
	// so one seed gives one schedule.
	jitter float64
}

func newBuilder(name string, seed uint64, engines ...string) *builder {
	return &builder{
		t:      &trace.Trace{Name: name, Granule: trace.DefaultGranule, Engines: engines},
		rng:    NewSplitMix64(seed),
		jitter: 0.1,
	}
}

// alloc introduces buffer name of size bytes, allocated at engine's next op.
func (b *builder) alloc(name string, size int64, engine string) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindAlloc, Name: name, Size: size, Engine: engine})
}

// external introduces a buffer that lives outside the arena (weights, caches).
func (b *builder) external(name string, size int64) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindExternal, Name: name, Size: size})
}

// view introduces view name of of: offset in bytes from of's first byte,
// shape and strides outermost first, strides in bytes.
func (b *builder) view(name, of string, offset int64, shape, strides []int64, elem int64) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindView, Name: name, Of: of, Offset: offset,
		Shape: shape, Strides: strides, Elem: elem})
}

// rows introduces the view of rows [lo, hi) of a dense row-major matrix
// whose rows are rowBytes long: one contiguous run.
func (b *builder) rows(name, of string, lo, hi, rowBytes int64) {
	b.view(name, of, lo*rowBytes, []int64{hi - lo, rowBytes}, []int64{rowBytes, 1}, 1)
}

// cols introduces the view of columns [lo, hi) (in elements) of every row
// of a row-major [n, width] matrix of elem-byte elements: n runs, strided.
func (b *builder) cols(name, of string, n, width, lo, hi, elem int64) {
	b.view(name, of, lo*elem, []int64{n, hi - lo}, []int64{width * elem, elem}, elem)
}

// opSpec is one op step.
type opSpec struct {
	reads, writes, waits []string
	inPlace              bool
}

// op submits op name to engine with a cost drawn around base (≥ 1).
func (b *builder) op(name, engine string, base float64, s opSpec) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindOp, Name: name, Engine: engine,
		Reads: s.reads, Writes: s.writes, Waits: s.waits, Cost: b.cost(base), InPlace: s.inPlace})
}

// cost jitters base by ±jitter with the builder's generator and rounds to
// a positive integer.
func (b *builder) cost(base float64) int64 {
	u := float64(b.rng.Next()>>11) / (1 << 53) // uniform [0, 1)
	c := base * (1 + b.jitter*(2*u-1))
	if c < 1 || math.IsNaN(c) {
		return 1
	}
	if c > 1e15 {
		return 1e15
	}
	return int64(math.Round(c))
}

func (b *builder) release(name string) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindRelease, Name: name})
}

func (b *builder) sync(op string) {
	b.t.Steps = append(b.t.Steps, trace.Step{Kind: trace.KindSync, Name: op})
}

// intn returns a uniform integer in [0, n) (n > 0).
func (b *builder) intn(n int64) int64 { return int64(b.rng.Next() % uint64(n)) }

// finish validates the trace and returns it.
func (b *builder) finish() (*trace.Trace, error) {
	if err := b.t.Validate(); err != nil {
		return nil, fmt.Errorf("bench: workload %s: %w", b.t.Name, err)
	}
	return b.t, nil
}

// Cost model shared by the generators, in simulated microseconds: a
// compute engine doing 100 TFLOP/s with 2 TB/s of memory bandwidth, a copy
// engine moving 25 GB/s over the host link, a host thread reading 10 GB/s
// with 5 µs of overhead per call. Costs are relative; only their ratios
// shape a replay.
const (
	computeFlopsPerUnit = 100e6
	computeBytesPerUnit = 2e6
	copyBytesPerUnit    = 25e3
	hostBytesPerUnit    = 10e3
	hostOverhead        = 5
)

// computeCost is the roofline time of an op doing flops and moving bytes.
func computeCost(flops, bytes float64) float64 {
	return math.Max(1, math.Max(flops/computeFlopsPerUnit, bytes/computeBytesPerUnit))
}

// copyCost is the time the copy engine takes to move bytes.
func copyCost(bytes float64) float64 { return math.Max(1, bytes/copyBytesPerUnit) }

// hostCost is the time a host thread takes to read bytes.
func hostCost(bytes float64) float64 { return hostOverhead + bytes/hostBytesPerUnit }
