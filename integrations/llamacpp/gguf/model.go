package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Model is the shape of one small model of a llama.cpp architecture.
type Model struct {
	// Name names the model in tests and tables.
	Name string
	// Arch is llama.cpp's architecture name: llama, phi3, gpt2 or qwen2.
	Arch string
	// Vocab is the vocabulary file's name in llama.cpp's models
	// directory, without "ggml-vocab-" and ".gguf" (llama-spm, gpt-2, …).
	Vocab string
	// Embd, Layers, Heads, HeadsKV and FF are the width, the number of
	// blocks, the attention and KV heads, and the feed-forward width.
	Embd, Layers, Heads, HeadsKV, FF int
	// Ctx is the trained context length.
	Ctx int
	// F16 stores every matrix as F16 (the wide shapes); else only the
	// token embeddings and the output matrix are F16.
	F16 bool
}

// Zoo is the small models the tests run: one per architecture, each a
// different graph shape in llama.cpp (separate or fused QKV, biases,
// SwiGLU or GELU, RMS norm or LayerNorm, GQA).
var Zoo = []Model{
	{Name: "llama", Arch: "llama", Vocab: "llama-spm", Embd: 256, Layers: 4, Heads: 8, HeadsKV: 4, FF: 768, Ctx: 2048},
	{Name: "phi3", Arch: "phi3", Vocab: "phi-3", Embd: 256, Layers: 4, Heads: 8, HeadsKV: 8, FF: 768, Ctx: 2048},
	{Name: "gpt2", Arch: "gpt2", Vocab: "gpt-2", Embd: 256, Layers: 4, Heads: 8, HeadsKV: 8, FF: 1024, Ctx: 1024},
	{Name: "qwen2", Arch: "qwen2", Vocab: "qwen2", Embd: 128, Layers: 4, Heads: 4, HeadsKV: 2, FF: 384, Ctx: 2048},
}

// Wide is the larger shapes, run by llamazoo -wide: the width of
// TinyLlama (2048) and of LLaMA-7B (4096) over fewer blocks.
var Wide = []Model{
	{Name: "llama-2048x8", Arch: "llama", Vocab: "llama-spm", Embd: 2048, Layers: 8, Heads: 32, HeadsKV: 4, FF: 5632, Ctx: 2048, F16: true},
	{Name: "llama-4096x2", Arch: "llama", Vocab: "llama-spm", Embd: 4096, Layers: 2, Heads: 32, HeadsKV: 32, FF: 11008, Ctx: 4096, F16: true},
	{Name: "phi3-3072x4", Arch: "phi3", Vocab: "phi-3", Embd: 3072, Layers: 4, Heads: 32, HeadsKV: 32, FF: 8192, Ctx: 4096, F16: true},
}

// weights draws a model's tensors from one seeded generator.
type weights struct {
	rng     *rand.Rand
	tensors []Tensor
}

// add appends a tensor of dimensions ne (innermost first): F16 when f16,
// else F32; values are N(0, scale²), plus one when norm (norm weights).
func (w *weights) add(name string, f16 bool, scale float64, norm bool, ne ...uint64) {
	n := uint64(1)
	for _, d := range ne {
		n *= d
	}
	t := Tensor{Name: name, Ne: ne, Type: TypeF32}
	if f16 {
		t.Type = TypeF16
		t.Data = make([]byte, 0, 2*n)
	} else {
		t.Data = make([]byte, 0, 4*n)
	}
	for range n {
		v := w.rng.NormFloat64() * scale
		if norm {
			v += 1
		}
		if f16 {
			t.Data = binary.LittleEndian.AppendUint16(t.Data, f32to16(float32(v)))
		} else {
			t.Data = binary.LittleEndian.AppendUint32(t.Data, math.Float32bits(float32(v)))
		}
	}
	w.tensors = append(w.tensors, t)
}

// Write writes m as a GGUF file at path: random weights from seed, the
// tokenizer copied from vocabDir/ggml-vocab-<m.Vocab>.gguf. The token
// embeddings and the output matrix are F16, the rest F32.
func (m Model) Write(path, vocabDir string, seed uint64) error {
	vocabPath := filepath.Join(vocabDir, "ggml-vocab-"+m.Vocab+".gguf")
	vkv, err := ReadKVs(vocabPath)
	if err != nil {
		return err
	}
	nVocab := uint64(0)
	var kvs []KV
	kvs = append(kvs, String("general.architecture", m.Arch), String("general.name", "subarena-zoo-"+m.Name))
	a := m.Arch + "."
	kvs = append(kvs,
		Uint32(a+"context_length", uint32(m.Ctx)),
		Uint32(a+"embedding_length", uint32(m.Embd)),
		Uint32(a+"block_count", uint32(m.Layers)),
		Uint32(a+"feed_forward_length", uint32(m.FF)),
		Uint32(a+"attention.head_count", uint32(m.Heads)),
		Uint32(a+"attention.head_count_kv", uint32(m.HeadsKV)),
	)
	if m.Arch == "gpt2" {
		kvs = append(kvs, Float32(a+"attention.layer_norm_epsilon", 1e-5))
	} else {
		kvs = append(kvs, Float32(a+"attention.layer_norm_rms_epsilon", 1e-5),
			Uint32(a+"rope.dimension_count", uint32(m.Embd/m.Heads)), Float32(a+"rope.freq_base", 10000))
	}
	for _, kv := range vkv {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			kvs = append(kvs, kv)
			if kv.Key == "tokenizer.ggml.tokens" && len(kv.Raw) >= 12 {
				nVocab = binary.LittleEndian.Uint64(kv.Raw[4:12])
			}
		}
	}
	if nVocab == 0 {
		return fmt.Errorf("%w: %s has no tokenizer.ggml.tokens", ErrFormat, vocabPath)
	}
	w := &weights{rng: rand.New(rand.NewPCG(seed, uint64(len(m.Name))))}
	e, ff := uint64(m.Embd), uint64(m.FF)
	kv := e / uint64(m.Heads) * uint64(m.HeadsKV)
	const s = 0.05
	w.add("token_embd.weight", true, 1, false, e, nVocab)
	if m.Arch == "gpt2" {
		w.add("position_embd.weight", false, 0.1, false, e, uint64(m.Ctx))
	}
	w.add("output_norm.weight", false, 0.1, true, e)
	if m.Arch == "gpt2" {
		w.add("output_norm.bias", false, 0.1, false, e)
	}
	w.add("output.weight", true, s, false, e, nVocab)
	for i := range m.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		w.add(p+"attn_norm.weight", false, 0.1, true, e)
		switch m.Arch {
		case "gpt2":
			w.add(p+"attn_norm.bias", false, 0.1, false, e)
			w.add(p+"attn_qkv.weight", m.F16, s, false, e, e+2*kv)
			w.add(p+"attn_qkv.bias", false, s, false, e+2*kv)
		case "phi3":
			w.add(p+"attn_qkv.weight", m.F16, s, false, e, e+2*kv)
		default:
			w.add(p+"attn_q.weight", m.F16, s, false, e, e)
			w.add(p+"attn_k.weight", m.F16, s, false, e, kv)
			w.add(p+"attn_v.weight", m.F16, s, false, e, kv)
			if m.Arch == "qwen2" {
				w.add(p+"attn_q.bias", false, s, false, e)
				w.add(p+"attn_k.bias", false, s, false, kv)
				w.add(p+"attn_v.bias", false, s, false, kv)
			}
		}
		w.add(p+"attn_output.weight", m.F16, s, false, e, e)
		if m.Arch == "gpt2" {
			w.add(p+"attn_output.bias", false, s, false, e)
		}
		w.add(p+"ffn_norm.weight", false, 0.1, true, e)
		switch m.Arch {
		case "gpt2":
			w.add(p+"ffn_norm.bias", false, 0.1, false, e)
			w.add(p+"ffn_up.weight", m.F16, s, false, e, ff)
			w.add(p+"ffn_up.bias", false, s, false, ff)
			w.add(p+"ffn_down.weight", m.F16, s, false, ff, e)
			w.add(p+"ffn_down.bias", false, s, false, e)
		case "phi3":
			w.add(p+"ffn_up.weight", m.F16, s, false, e, 2*ff)
			w.add(p+"ffn_down.weight", m.F16, s, false, ff, e)
		default:
			w.add(p+"ffn_gate.weight", m.F16, s, false, e, ff)
			w.add(p+"ffn_up.weight", m.F16, s, false, e, ff)
			w.add(p+"ffn_down.weight", m.F16, s, false, ff, e)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, kvs, w.tensors); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// f32to16 converts to IEEE half precision, rounding to nearest even.
func f32to16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++
	}
	return sign | uint16(half)
}
