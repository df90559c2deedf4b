package gguf_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/subarena/subarena/integrations/llamacpp/gguf"
)

// Write a two-tensor GGUF file with a little metadata, then read its
// metadata back.
func Example() {
	dir, err := os.MkdirTemp("", "gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	f, err := os.Create(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	kvs := []gguf.KV{
		gguf.String("general.architecture", "llama"),
		gguf.Uint32("llama.block_count", 1),
		gguf.Float32("llama.attention.layer_norm_rms_epsilon", 1e-5),
	}
	tensors := []gguf.Tensor{
		{Name: "norm.weight", Ne: []uint64{4}, Type: gguf.TypeF32, Data: make([]byte, 4*4)},
		{Name: "proj.weight", Ne: []uint64{4, 2}, Type: gguf.TypeF16, Data: make([]byte, 2*8)},
	}
	if err := gguf.Write(f, kvs, tensors); err != nil {
		fmt.Println(err)
		return
	}
	if err := f.Close(); err != nil {
		fmt.Println(err)
		return
	}
	got, err := gguf.ReadKVs(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kv := range got {
		fmt.Printf("%s type %d %q\n", kv.Key, kv.Type, kv.String())
	}
	// Output:
	// general.architecture type 8 "llama"
	// llama.block_count type 4 ""
	// llama.attention.layer_norm_rms_epsilon type 6 ""
}
