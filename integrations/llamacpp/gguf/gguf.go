// Package gguf reads the metadata of GGUF files and writes small GGUF
// models with random weights: the model zoo the llama.cpp tests run.
//
// A GGUF file (version 3, little-endian) is a header, key-value metadata,
// tensor descriptors (name, dimensions innermost first, ggml type, offset
// in the data section) and the data section, each tensor aligned to
// general.alignment (32 bytes by default). The reader keeps every value's
// encoding as it is, so that a tokenizer's keys copy from a vocabulary file
// (llama.cpp's models/ggml-vocab-*.gguf) to a model byte for byte.
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// ErrFormat reports a file that is not GGUF version 2 or 3, or is cut short.
var ErrFormat = errors.New("gguf: bad file")

const (
	magic     = 0x46554747 // "GGUF"
	version   = 3
	alignment = 32
)

// Value types of GGUF metadata.
const (
	typeUint8   = 0
	typeInt8    = 1
	typeUint16  = 2
	typeInt16   = 3
	typeUint32  = 4
	typeInt32   = 5
	typeFloat32 = 6
	typeBool    = 7
	typeString  = 8
	typeArray   = 9
	typeUint64  = 10
	typeInt64   = 11
	typeFloat64 = 12
)

// fixedSize is the encoded size of each scalar type (strings and arrays
// vary).
var fixedSize = map[uint32]int{typeUint8: 1, typeInt8: 1, typeUint16: 2, typeInt16: 2, typeUint32: 4,
	typeInt32: 4, typeFloat32: 4, typeBool: 1, typeUint64: 8, typeInt64: 8, typeFloat64: 8}

// KV is one metadata entry: its key, value type and the value's encoding.
type KV struct {
	Key  string
	Type uint32
	Raw  []byte
}

// String returns a string value's text ("" for other types).
func (kv KV) String() string {
	if kv.Type != typeString || len(kv.Raw) < 8 {
		return ""
	}
	return string(kv.Raw[8:])
}

// Uint32 returns a KV of type uint32.
func Uint32(key string, v uint32) KV {
	return KV{Key: key, Type: typeUint32, Raw: binary.LittleEndian.AppendUint32(nil, v)}
}

// Float32 returns a KV of type float32.
func Float32(key string, v float32) KV {
	return KV{Key: key, Type: typeFloat32, Raw: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

// String returns a KV of type string.
func String(key, v string) KV {
	return KV{Key: key, Type: typeString, Raw: append(binary.LittleEndian.AppendUint64(nil, uint64(len(v))), v...)}
}

// reader decodes little-endian values, remembering the first error.
type reader struct {
	r   *bufio.Reader
	err error
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > 1<<30 {
		r.err = fmt.Errorf("%w: a %d-byte value", ErrFormat, n)
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return b
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if r.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if r.err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// value reads the encoding of one value of type t and appends it to raw.
func (r *reader) value(t uint32, raw []byte) []byte {
	if n, ok := fixedSize[t]; ok {
		return append(raw, r.bytes(uint64(n))...)
	}
	switch t {
	case typeString:
		n := r.u64()
		raw = binary.LittleEndian.AppendUint64(raw, n)
		return append(raw, r.bytes(n)...)
	case typeArray:
		et, n := r.u32(), r.u64()
		raw = binary.LittleEndian.AppendUint32(raw, et)
		raw = binary.LittleEndian.AppendUint64(raw, n)
		if es, ok := fixedSize[et]; ok {
			return append(raw, r.bytes(n*uint64(es))...)
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			raw = r.value(et, raw)
		}
		return raw
	}
	if r.err == nil {
		r.err = fmt.Errorf("%w: value type %d", ErrFormat, t)
	}
	return raw
}

// ReadKVs returns the metadata of the GGUF file at path.
func ReadKVs(path string) ([]KV, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &reader{r: bufio.NewReaderSize(f, 1<<20)}
	if m, v := r.u32(), r.u32(); r.err == nil && (m != magic || (v != 2 && v != 3)) {
		return nil, fmt.Errorf("%w: %s: magic %#x version %d", ErrFormat, path, m, v)
	}
	_ = r.u64() // tensors
	n := r.u64()
	var kvs []KV
	for i := uint64(0); i < n && r.err == nil; i++ {
		key := string(r.bytes(r.u64()))
		t := r.u32()
		kvs = append(kvs, KV{Key: key, Type: t, Raw: r.value(t, nil)})
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", path, r.err)
	}
	return kvs, nil
}

// Tensor is one tensor to write: its name, dimensions innermost first
// (ggml's ne), ggml type (TypeF32 or TypeF16) and data.
type Tensor struct {
	Name string
	Ne   []uint64
	Type uint32
	Data []byte
}

// ggml types the writer uses.
const (
	TypeF32 = 0
	TypeF16 = 1
)

func pad(n uint64) uint64 { return (n + alignment - 1) / alignment * alignment }

// Write writes a GGUF version 3 file with kvs and tensors to w.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, magic)
	b = binary.LittleEndian.AppendUint32(b, version)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(tensors)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(kvs)))
	str := func(s string) {
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, kv := range kvs {
		str(kv.Key)
		b = binary.LittleEndian.AppendUint32(b, kv.Type)
		b = append(b, kv.Raw...)
	}
	off := uint64(0)
	for _, t := range tensors {
		str(t.Name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Ne)))
		for _, d := range t.Ne {
			b = binary.LittleEndian.AppendUint64(b, d)
		}
		b = binary.LittleEndian.AppendUint32(b, t.Type)
		b = binary.LittleEndian.AppendUint64(b, off)
		off = pad(off + uint64(len(t.Data)))
	}
	b = append(b, make([]byte, pad(uint64(len(b)))-uint64(len(b)))...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := bw.Write(t.Data); err != nil {
			return err
		}
		if _, err := bw.Write(make([]byte, pad(uint64(len(t.Data)))-uint64(len(t.Data)))); err != nil {
			return err
		}
	}
	return bw.Flush()
}
