// Package tracejson is the JSON text of subarena's formats, below the trace package.
//
// It renders subarena-trace/v1 documents in trace.Write's layout: the top-level keys one
// per line, one step per line, every default written out (Write, Step, Header). It needs
// nothing from the trace package, so that package and the generators its tests read
// write documents the same way.
//
// It places errors in the text of a document: the line and column of a byte offset
// (LineCol), and the offset at which JSON stops being well-formed (SyntaxOffset).
// Package trace and its importers report positions with it, so they count them the
// same way.
package tracejson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// Quote renders s as a JSON string without HTML escaping.
func Quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	return string(bytes.TrimRight(b.Bytes(), "\n"))
}

// list renders v as a JSON array on one line, "[a, b]", each element as elem renders it.
func list[T any](v []T, elem func(T) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(elem(x))
	}
	b.WriteByte(']')
	return b.String()
}

// Ints renders v as a JSON array of numbers on one line.
func Ints(v []int64) string {
	return list(v, func(x int64) string { return strconv.FormatInt(x, 10) })
}

// Strings renders v as a JSON array of strings on one line.
func Strings(v []string) string { return list(v, Quote) }

// Step is one step of a document: Kind is its key ("alloc", "external", "view", "op",
// "release" or "sync") and the other fields are trace.Step's.
type Step struct {
	Kind                 string
	Name, Engine, Of     string
	Size, Offset, Elem   int64
	Shape, Strides       []int64
	Reads, Writes, Waits []string
	Cost                 int64
	InPlace              bool
}

// JSON renders s on one line, keys in the format's order, the fields its kind has
// written out (an alloc's shape and elem only when it has a shape; an op's lists only
// when not empty, its inplace only when true).
func (s *Step) JSON() string {
	var b strings.Builder
	b.WriteString("{" + Quote(s.Kind) + ": " + Quote(s.Name))
	kv := func(k, v string) { b.WriteString(", " + Quote(k) + ": " + v) }
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch s.Kind {
	case "alloc":
		kv("size", num(s.Size))
		kv("engine", Quote(s.Engine))
		if s.Shape != nil {
			kv("shape", Ints(s.Shape))
			kv("elem", num(s.Elem))
		}
	case "external":
		kv("size", num(s.Size))
	case "view":
		kv("of", Quote(s.Of))
		kv("offset", num(s.Offset))
		kv("shape", Ints(s.Shape))
		kv("strides", Ints(s.Strides))
		kv("elem", num(s.Elem))
	case "op":
		kv("engine", Quote(s.Engine))
		if len(s.Reads) > 0 {
			kv("reads", Strings(s.Reads))
		}
		if len(s.Writes) > 0 {
			kv("writes", Strings(s.Writes))
		}
		if len(s.Waits) > 0 {
			kv("waits", Strings(s.Waits))
		}
		kv("cost", num(s.Cost))
		if s.InPlace {
			kv("inplace", "true")
		}
	}
	b.WriteString("}")
	return b.String()
}

// Header is the top-level keys of a document, written before its steps.
type Header struct {
	Format, Name string
	Granule      int64
	Engines      []string
}

// Write writes the document with header h and n steps, step i on one line as step(i)
// renders it.
func Write(w io.Writer, h Header, n int, step func(i int) string) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("{\n")
	bw.WriteString(`  "format": ` + Quote(h.Format) + ",\n")
	bw.WriteString(`  "name": ` + Quote(h.Name) + ",\n")
	bw.WriteString(`  "granule": ` + strconv.FormatInt(h.Granule, 10) + ",\n")
	bw.WriteString(`  "engines": ` + Strings(h.Engines) + ",\n")
	bw.WriteString(`  "steps": [`)
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.WriteString(step(i))
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	return bw.Flush()
}
