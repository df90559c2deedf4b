package trace

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
)

// Write writes t as a subarena-trace/v1 document: the top-level keys one per line and one
// step per line, every default written out (granule, engines of allocs and ops, costs).
// Parsing the output gives back a Trace equal to t when t is normalized.
func Write(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{\n")
	bw.WriteString(`  "format": ` + quote(Format) + ",\n")
	bw.WriteString(`  "name": ` + quote(t.Name) + ",\n")
	bw.WriteString(`  "granule": ` + strconv.FormatInt(t.Granule, 10) + ",\n")
	bw.WriteString(`  "engines": ` + stringList(t.Engines) + ",\n")
	bw.WriteString(`  "steps": [`)
	for i, s := range t.Steps {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.WriteString(stepJSON(s))
	}
	if len(t.Steps) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}

// Marshal returns Write's output as a byte slice.
func Marshal(t *Trace) []byte {
	var b bytes.Buffer
	_ = Write(&b, t) // a bytes.Buffer never fails
	return b.Bytes()
}

// stepJSON renders one step on one line, keys in the order of stepKeys.
func stepJSON(s Step) string {
	var b strings.Builder
	b.WriteString("{" + quote(s.Kind.String()) + ": " + quote(s.Name))
	kv := func(k, v string) { b.WriteString(", " + quote(k) + ": " + v) }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch s.Kind {
	case KindAlloc:
		kv("size", num(s.Size))
		kv("engine", quote(s.Engine))
		if s.Shape != nil {
			kv("shape", intList(s.Shape))
			kv("elem", num(s.Elem))
		}
	case KindExternal:
		kv("size", num(s.Size))
	case KindView:
		kv("of", quote(s.Of))
		kv("offset", num(s.Offset))
		kv("shape", intList(s.Shape))
		kv("strides", intList(s.Strides))
		kv("elem", num(s.Elem))
	case KindOp:
		kv("engine", quote(s.Engine))
		if len(s.Reads) > 0 {
			kv("reads", stringList(s.Reads))
		}
		if len(s.Writes) > 0 {
			kv("writes", stringList(s.Writes))
		}
		if len(s.Waits) > 0 {
			kv("waits", stringList(s.Waits))
		}
		kv("cost", num(s.Cost))
		if s.Inplace {
			kv("inplace", "true")
		}
	}
	b.WriteString("}")
	return b.String()
}

func intList(v []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	b.WriteByte(']')
	return b.String()
}

func stringList(v []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(x))
	}
	b.WriteByte(']')
	return b.String()
}
