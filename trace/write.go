package trace

import (
	"bytes"
	"io"

	"github.com/subarena/subarena/trace/internal/tracejson"
)

// Write writes t as a subarena-trace/v1 document: the top-level keys one per line and one
// step per line, every default written out (granule, engines of allocs and ops, costs).
// Parsing the output gives back a Trace equal to t when t is normalized.
func Write(w io.Writer, t *Trace) error {
	h := tracejson.Header{Format: Format, Name: t.Name, Granule: t.Granule, Engines: t.Engines}
	return tracejson.Write(w, h, len(t.Steps), func(i int) string { return stepJSON(t.Steps[i]) })
}

// Marshal returns Write's output as a byte slice.
func Marshal(t *Trace) []byte {
	var b bytes.Buffer
	_ = Write(&b, t) // a bytes.Buffer never fails
	return b.Bytes()
}

// stepJSON renders one step on one line, keys in the order of stepKeys.
func stepJSON(s Step) string {
	js := tracejson.Step{
		Kind: s.Kind.String(), Name: s.Name, Engine: s.Engine, Of: s.Of,
		Size: s.Size, Offset: s.Offset, Elem: s.Elem, Shape: s.Shape, Strides: s.Strides,
		Reads: s.Reads, Writes: s.Writes, Waits: s.Waits, Cost: s.Cost, InPlace: s.InPlace,
	}
	return js.JSON()
}
