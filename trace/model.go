package trace

import "slices"

// Format is the value of the "format" key of every subarena-trace/v1 document.
const Format = "subarena-trace/v1"

// DefaultGranule is the granule of a trace that does not name one: 256 bytes.
const DefaultGranule = 256

// DefaultCost is the simulated duration of an op that does not name one.
const DefaultCost = 1

// Trace is one subarena-trace/v1 document: what a host program issues, in order.
//
// A Trace returned by Parse (or tracefile.Read, tracefile.Load) is normalized: Granule is
// set (DefaultGranule when the document left it out), every alloc and op step names its
// engine (the first engine when the document left it out) and every op has its Cost
// (DefaultCost when left out). Writing a normalized Trace and parsing the result gives back an identical Trace.
type Trace struct {
	// Name is free text, used in reports.
	Name string
	// Granule is the arena's unit and alignment in bytes: a power of two.
	Granule int64
	// Engines are the strictly ordered queues ops run on; names are unique and non-empty.
	Engines []string
	// Steps are in host program order.
	Steps []Step
}

// Kind says which of the six step kinds a Step is.
type Kind uint8

// The step kinds, named by the key that introduces each in the JSON format.
const (
	KindInvalid  Kind = iota
	KindAlloc         // {"alloc": B, "size": N, "engine": E, "shape": [..], "elem": S}
	KindExternal      // {"external": B, "size": N}
	KindView          // {"view": V, "of": P, "offset": O, "shape": [..], "strides": [..], "elem": S}
	KindOp            // {"op": N, "engine": E, "reads": [..], "writes": [..], "waits": [..], "cost": C, "inplace": bool}
	KindRelease       // {"release": B or V}
	KindSync          // {"sync": N}
)

var kindNames = [...]string{"invalid", "alloc", "external", "view", "op", "release", "sync"}

// String returns the JSON key of the kind ("alloc", "view", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Step is one host action. Which fields mean something depends on Kind:
//
//	kind      Name          other fields
//	alloc     buffer        Size, Engine, Shape+Elem (optional natural dense layout)
//	external  buffer        Size
//	view      view          Of, Offset, Shape, Strides, Elem
//	op        op            Engine, Reads, Writes, Waits, Cost, InPlace
//	release   buffer/view   -
//	sync      op            -
//
// Fields that do not belong to the kind are zero. Buffers and views share one namespace
// (data names); ops have their own (op names), so an op may carry the name of the buffer
// it writes, as the ggml importer does.
type Step struct {
	Kind Kind
	// Name is the buffer, view or op the step introduces, or the target of a release or
	// sync.
	Name string
	// Size is the byte size of an alloc or external buffer (> 0).
	Size int64
	// Engine is where an op runs, or the allocation point's engine of an alloc.
	Engine string
	// Of is the buffer or view a view is taken of.
	Of string
	// Offset is a view's byte offset relative to the first byte of Of (may be negative
	// when Of has negative strides).
	Offset int64
	// Shape is outermost dimension first (numpy order). For a view it has the length of
	// Strides; for an alloc it is optional and then product(Shape) × Elem = Size.
	Shape []int64
	// Strides are a view's byte strides, outermost first; they may be negative or zero.
	Strides []int64
	// Elem is the element size in bytes (> 0) of a view, or of an alloc's natural layout
	// (0 when the alloc gives none).
	Elem int64
	// Reads and Writes name buffers (all their bytes) or views (exactly the bytes they
	// cover). Waits name earlier ops that must complete before this one starts.
	Reads, Writes, Waits []string
	// Cost is an op's simulated duration (> 0).
	Cost int64
	// InPlace says the op's kernel tolerates a written view sharing exactly the bytes of a
	// same-shape, same-elem read view, element i over element i.
	InPlace bool
}

// Clone returns a deep copy of t.
func (t *Trace) Clone() *Trace {
	c := &Trace{Name: t.Name, Granule: t.Granule, Engines: append([]string(nil), t.Engines...)}
	c.Steps = make([]Step, len(t.Steps))
	for i, s := range t.Steps {
		c.Steps[i] = s.clone()
	}
	return c
}

func (s Step) clone() Step {
	s.Shape = cloneInts(s.Shape)
	s.Strides = cloneInts(s.Strides)
	s.Reads = cloneStrings(s.Reads)
	s.Writes = cloneStrings(s.Writes)
	s.Waits = cloneStrings(s.Waits)
	return s
}

func cloneInts(v []int64) []int64 {
	if v == nil {
		return nil
	}
	return append([]int64{}, v...)
}

func cloneStrings(v []string) []string {
	if v == nil {
		return nil
	}
	return append([]string{}, v...)
}

// Equal reports whether t and o are the same trace, field by field.
func (t *Trace) Equal(o *Trace) bool {
	if t == nil || o == nil {
		return t == o
	}
	if t.Name != o.Name || t.Granule != o.Granule || !slices.Equal(t.Engines, o.Engines) ||
		len(t.Steps) != len(o.Steps) {
		return false
	}
	for i := range t.Steps {
		if !t.Steps[i].Equal(o.Steps[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether s and o are the same step; a nil and an empty list are equal.
func (s Step) Equal(o Step) bool {
	return s.Kind == o.Kind && s.Name == o.Name && s.Size == o.Size && s.Engine == o.Engine &&
		s.Of == o.Of && s.Offset == o.Offset && slices.Equal(s.Shape, o.Shape) &&
		slices.Equal(s.Strides, o.Strides) && s.Elem == o.Elem && slices.Equal(s.Reads, o.Reads) &&
		slices.Equal(s.Writes, o.Writes) && slices.Equal(s.Waits, o.Waits) && s.Cost == o.Cost &&
		s.InPlace == o.InPlace
}
