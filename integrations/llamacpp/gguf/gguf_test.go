package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestF32to16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.1, 0x2e66}, {65504, 0x7bff}, {65520, 0x7c00},
		{float32(math.Inf(1)), 0x7c00}, {1e-8, 0}, {6e-8, 0x0001}, {6.1035156e-05, 0x0400},
		{1.0009766, 0x3c01}, {1.00048828125, 0x3c00}, // a tie rounds to even
	} {
		if got := f32to16(c.f); got != c.want {
			t.Errorf("f32to16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// TestRoundTrip writes a file with every kind of value the zoo uses, an
// array among them, and reads its metadata back unchanged.
func TestRoundTrip(t *testing.T) {
	arr := binary.LittleEndian.AppendUint32(nil, typeString)
	arr = binary.LittleEndian.AppendUint64(arr, 2)
	for _, s := range []string{"<s>", "hello"} {
		arr = binary.LittleEndian.AppendUint64(arr, uint64(len(s)))
		arr = append(arr, s...)
	}
	kvs := []KV{String("general.architecture", "llama"), Uint32("llama.block_count", 4),
		Float32("llama.attention.layer_norm_rms_epsilon", 1e-5), {Key: "tokenizer.ggml.tokens", Type: typeArray, Raw: arr}}
	path := filepath.Join(t.TempDir(), "m.gguf")
	var buf bytes.Buffer
	tensors := []Tensor{{Name: "a", Ne: []uint64{3}, Type: TypeF32, Data: make([]byte, 12)},
		{Name: "b", Ne: []uint64{2, 2}, Type: TypeF16, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}
	if err := Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadKVs(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(kvs) {
		t.Fatalf("read %d keys, wrote %d", len(got), len(kvs))
	}
	for i := range kvs {
		if got[i].Key != kvs[i].Key || got[i].Type != kvs[i].Type || !bytes.Equal(got[i].Raw, kvs[i].Raw) {
			t.Errorf("key %d: read %+v, wrote %+v", i, got[i], kvs[i])
		}
	}
	if got[0].String() != "llama" {
		t.Errorf("String() = %q", got[0].String())
	}
	// the data section starts aligned and ends with the last tensor's padding
	if n := buf.Len(); n%alignment != 0 || !bytes.Equal(buf.Bytes()[n-32:n-24], tensors[1].Data) {
		t.Errorf("file of %d bytes does not end with tensor b, aligned", n)
	}
}

func TestReadKVsRejects(t *testing.T) {
	dir := t.TempDir()
	for name, b := range map[string][]byte{
		"not-gguf":  []byte("GGML\x03\x00\x00\x00"),
		"truncated": {0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0, 0, 0},
		"bad-type":  append(append([]byte{0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0}, make([]byte, 8)...), 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'k', 99, 0, 0, 0),
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadKVs(p); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: err = %v, want ErrFormat", name, err)
		}
	}
}
