package plan

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/subarena/subarena/trace/ggmltrace"
)

// This file builds synthetic ggml-alloc-trace/1 graphs the way ggml builds
// them: ne/nb innermost first, dense nb for fresh tensors, views carrying
// their strides into their (collapsed) view_src, KV-cache writes as CPY
// nodes that are views of the cache, weights and the cache in their own
// buffers.

// ggArch selects the decoder architecture of a generated graph.
type ggArch int

const (
	ggLLaMA ggArch = iota // RMS_NORM, ROPE, SwiGLU
	ggGPT2                // NORM with affine, biases, GELU MLP
)

// ggParams shapes a generated graph.
type ggParams struct {
	Arch                          ggArch
	Layers, Embd, FF, Head        int64
	Tokens, Past                  int64 // Tokens 1 = decode; Past = tokens already cached
	FusedQKV, FusedGateUp, LMHead bool
	Vocab                         int64 // LM head width when LMHead
}

func (p ggParams) String() string {
	arch := "llama"
	if p.Arch == ggGPT2 {
		arch = "gpt2"
	}
	s := fmt.Sprintf("%s L%d E%d F%d H%d T%d P%d", arch, p.Layers, p.Embd, p.FF, p.Head, p.Tokens, p.Past)
	if p.Arch == ggLLaMA {
		if p.FusedQKV {
			s += " qkv"
		}
		if p.FusedGateUp {
			s += " gu"
		}
	}
	if p.LMHead {
		s += fmt.Sprintf(" V%d", p.Vocab)
	}
	return s
}

// ggTensorRecord is a tensor as ggml records its graph: the fields the
// importer reads (ggmltrace.Tensor) and the descriptive ones it does not.
type ggTensorRecord struct {
	ggmltrace.Tensor
	OpDesc string `json:"op_desc"`
	IsLeaf bool   `json:"is_leaf"`
	IsView bool   `json:"is_view"`
}

// ggTensorOut is one tensor of a generated graph, every field of the format.
// Ne and Nb always have four entries, and no two tensors share them.
type ggTensorOut struct {
	Index int `json:"index"`
	ggTensorRecord
	Offset     *int64  `json:"offset"`
	AllocStep  *int64  `json:"ggml_alloc_step"`
	FreeStep   *int64  `json:"ggml_free_step"`
	InplaceOf  *string `json:"inplace_of"`
	viewSrcPtr *ggTensorOut
}

// setDense gives t the dense strides of its type and shape, and the bytes
// and allocation size they take.
func (t *ggTensorOut) setDense() {
	t.Nb = ggDenseNb(t.Type, t.Ne)
	t.Nbytes = ggNbytes(t.Type, t.Ne, t.Nb)
	sz := t.Nbytes
	t.AllocSize = &sz
}

type ggBuilder struct {
	leafs, nodes []*ggTensorOut
}

func ggElem(typ string) int64 { return ggTypeSize[typ][0] }

func ggDenseNb(typ string, ne []int64) []int64 {
	nb := []int64{ggElem(typ), 0, 0, 0}
	for k := 1; k < 4; k++ {
		nb[k] = nb[k-1] * ne[k-1]
	}
	return nb
}

func ggNbytes(typ string, ne, nb []int64) int64 {
	n := ggElem(typ)
	for k := range 4 {
		n += (ne[k] - 1) * nb[k]
	}
	return n
}

func ggNe(ne ...int64) []int64 {
	out := []int64{1, 1, 1, 1}
	copy(out, ne)
	return out
}

func (g *ggBuilder) leaf(name, typ, buffer string, input bool, ne ...int64) *ggTensorOut {
	t := &ggTensorOut{ggTensorRecord: ggTensorRecord{Tensor: ggmltrace.Tensor{Name: name, Op: "NONE", Type: typ,
		Ne: ggNe(ne...), Src: []*string{}, IsInput: input, Buffer: buffer, ExecIndex: -1}, OpDesc: "NONE", IsLeaf: true}}
	t.setDense()
	g.leafs = append(g.leafs, t)
	return t
}

func ggSrcs(srcs []*ggTensorOut) []*string {
	out := make([]*string, len(srcs))
	for i, s := range srcs {
		name := s.Name
		out[i] = &name
	}
	return out
}

// op appends a node computing a fresh dense f32 tensor of shape ne.
func (g *ggBuilder) op(name, op, desc string, ne []int64, srcs ...*ggTensorOut) *ggTensorOut {
	if desc == "" {
		desc = op
	}
	t := &ggTensorOut{ggTensorRecord: ggTensorRecord{Tensor: ggmltrace.Tensor{Name: name, Op: op, Type: "f32",
		Ne: slices.Clone(ne), Src: ggSrcs(srcs), Buffer: "compute"}, OpDesc: desc}}
	t.setDense()
	g.nodes = append(g.nodes, t)
	return t
}

// like is op with the shape of its first source (elementwise ops).
func (g *ggBuilder) like(name, op, desc string, srcs ...*ggTensorOut) *ggTensorOut {
	return g.op(name, op, desc, srcs[0].Ne, srcs...)
}

func (g *ggBuilder) mulMat(name string, a, b *ggTensorOut) *ggTensorOut {
	return g.op(name, "MUL_MAT", "", ggNe(a.Ne[1], b.Ne[1], b.Ne[2], b.Ne[3]), a, b)
}

// view appends a view node of src with ne and nb (as many as given; ggml
// fills the rest: nb[k] = nb[k-1]*ne[k-1]), offs relative to src (views of
// views collapse onto the base, as ggml does).
func (g *ggBuilder) view(name, op string, src *ggTensorOut, ne, nb []int64, offs int64) *ggTensorOut {
	n4 := ggNe(ne...)
	b4 := make([]int64, 4)
	copy(b4, nb)
	for k := len(nb); k < 4; k++ {
		b4[k] = b4[k-1] * n4[k-1]
	}
	return g.view4(name, op, src, n4, b4, offs)
}

// view4 appends a view node of src with four-entry ne and nb.
func (g *ggBuilder) view4(name, op string, src *ggTensorOut, ne, nb []int64, offs int64) *ggTensorOut {
	base, off := src, offs
	if src.viewSrcPtr != nil {
		base, off = src.viewSrcPtr, src.ViewOffs+offs
	}
	bn := base.Name
	t := &ggTensorOut{viewSrcPtr: base, ggTensorRecord: ggTensorRecord{Tensor: ggmltrace.Tensor{Name: name, Op: op,
		Type: src.Type, Ne: slices.Clone(ne), Nb: slices.Clone(nb), Src: ggSrcs([]*ggTensorOut{src}), ViewSrc: &bn,
		ViewOffs: off, Buffer: base.Buffer}, OpDesc: op, IsView: true}}
	t.Nbytes = ggNbytes(t.Type, ne, nb)
	g.nodes = append(g.nodes, t)
	return t
}

func (g *ggBuilder) reshape(name string, src *ggTensorOut, ne []int64) *ggTensorOut {
	return g.view4(name, "RESHAPE", src, ne, ggDenseNb(src.Type, ne), 0)
}

// permute is ggml_permute(src, a0..a3): dimension k goes to position ax[k].
func (g *ggBuilder) permute(name string, src *ggTensorOut, ax [4]int) *ggTensorOut {
	ne, nb := make([]int64, 4), make([]int64, 4)
	for k := range 4 {
		ne[ax[k]], nb[ax[k]] = src.Ne[k], src.Nb[k]
	}
	return g.view4(name, "PERMUTE", src, ne, nb, 0)
}

func (g *ggBuilder) transpose(name string, src *ggTensorOut) *ggTensorOut {
	ne, nb := slices.Clone(src.Ne), slices.Clone(src.Nb)
	ne[0], ne[1] = ne[1], ne[0]
	nb[0], nb[1] = nb[1], nb[0]
	return g.view4(name, "TRANSPOSE", src, ne, nb, 0)
}

// cpy appends CPY(src, dst): a node that is a view of dst's base.
func (g *ggBuilder) cpy(name string, src, dst *ggTensorOut) *ggTensorOut {
	t := g.view4(name, "CPY", dst, dst.Ne, dst.Nb, 0)
	t.Src = ggSrcs([]*ggTensorOut{src, dst})
	return t
}

// ggGenerate builds the graph of p as a ggml-alloc-trace/1 document.
func ggGenerate(p ggParams) ([]byte, error) {
	if p.Layers < 1 || p.Head < 1 || p.Embd%p.Head != 0 || p.Tokens < 1 || p.Past < 0 || p.FF < 1 {
		return nil, fmt.Errorf("bad params %v", p)
	}
	g := &ggBuilder{}
	E, F, H, T := p.Embd, p.FF, p.Head, p.Tokens
	hd := E / H
	nkv := p.Past + T
	nctx := nkv
	inp := g.leaf("inp_embd", "f32", "compute", true, E, T)
	var pos *ggTensorOut
	if p.Arch == ggLLaMA {
		pos = g.leaf("inp_pos", "i32", "compute", true, T)
	}
	w := func(name string, typ string, ne ...int64) *ggTensorOut {
		return g.leaf("w."+name, typ, "weights", false, ne...)
	}
	// norm is RMS_NORM·w (LLaMA) or NORM·g+b (GPT-2); wn names the weights.
	norm := func(nn, mn, bn, wn string, x *ggTensorOut) *ggTensorOut {
		if p.Arch == ggLLaMA {
			n := g.like(nn, "RMS_NORM", "", x)
			return g.like(mn, "MUL", "", n, w(wn, "f32", E))
		}
		n := g.like(nn, "NORM", "", x)
		n = g.like(mn, "MUL", "", n, w(wn+"_g", "f32", E))
		return g.like(bn, "ADD", "", n, w(wn+"_b", "f32", E))
	}
	bias := func(name string, x *ggTensorOut, l string) *ggTensorOut {
		if p.Arch != ggGPT2 {
			return x
		}
		return g.like(name+"_b"+l, "ADD", "", x, w(name+"_b"+l, "f32", x.Ne[0]))
	}
	x := inp
	for layer := range p.Layers {
		l := fmt.Sprintf("-%d", layer)
		ck := g.leaf("cache_k"+l, "f16", "kv_cache", false, E, nctx)
		cv := g.leaf("cache_v"+l, "f16", "kv_cache", false, nctx, E)
		cur := norm("attn_norm"+l, "attn_norm_w"+l, "attn_norm_b"+l, "attn_norm"+l, x)
		// K: [hd, H, T] into the cache; V: [E, T]; Q: [hd, H, T].
		var K, V, Q func() *ggTensorOut
		if p.FusedQKV || p.Arch == ggGPT2 {
			qkv := bias("qkv", g.mulMat("qkv"+l, w("qkv"+l, "f16", E, 3*E), cur), l)
			rs := 3 * E * 4
			K = func() *ggTensorOut { return g.view("K"+l, "VIEW", qkv, []int64{hd, H, T}, []int64{4, hd * 4, rs}, E*4) }
			V = func() *ggTensorOut { return g.view("V"+l, "VIEW", qkv, []int64{E, T}, []int64{4, rs}, 2*E*4) }
			Q = func() *ggTensorOut { return g.view("Q"+l, "VIEW", qkv, []int64{hd, H, T}, []int64{4, hd * 4, rs}, 0) }
		} else {
			K = func() *ggTensorOut {
				return g.reshape("K"+l, g.mulMat("Kcur"+l, w("k"+l, "f16", E, E), cur), ggNe(hd, H, T))
			}
			V = func() *ggTensorOut { return g.mulMat("V"+l, w("v"+l, "f16", E, E), cur) }
			Q = func() *ggTensorOut {
				return g.reshape("Q"+l, g.mulMat("Qcur"+l, w("q"+l, "f16", E, E), cur), ggNe(hd, H, T))
			}
		}
		k0 := K()
		if p.Arch == ggLLaMA {
			k0 = g.like("K_rope"+l, "ROPE", "", k0, pos)
		}
		kview := g.view("k_cache_view"+l, "VIEW", ck, []int64{E * T}, []int64{2}, p.Past*E*2)
		g.cpy("k_cache_store"+l, k0, kview)
		vt := g.transpose("V_t"+l, V())
		vview := g.view("v_cache_view"+l, "VIEW", cv, []int64{T, E}, []int64{2, nctx * 2}, p.Past*2)
		g.cpy("v_cache_store"+l, vt, vview)
		v := g.view("v"+l, "VIEW", cv, []int64{nkv, hd, H}, []int64{2, nctx * 2, nctx * 2 * hd}, 0)
		k := g.view("k"+l, "VIEW", ck, []int64{hd, nkv, H}, []int64{2, E * 2, hd * 2}, 0)
		q0 := Q()
		if p.Arch == ggLLaMA {
			q0 = g.like("Q_rope"+l, "ROPE", "", q0, pos)
		}
		q := g.permute("q"+l, q0, [4]int{0, 2, 1, 3})
		kq := g.mulMat("kq"+l, k, q)
		kq = g.like("kq_scaled"+l, "SCALE", "", kq)
		kq = g.like("kq_masked"+l, "DIAG_MASK_INF", "", kq)
		kq = g.like("kq_soft_max"+l, "SOFT_MAX", "", kq)
		kqv := g.mulMat("kqv"+l, v, kq)
		merged := g.permute("kqv_merged"+l, kqv, [4]int{0, 2, 1, 3})
		cont := g.op("kqv_merged_cont"+l, "CONT", "", ggNe(E, T), merged)
		attn := bias("attn_out", g.mulMat("attn_out"+l, w("o"+l, "f16", E, E), cont), l)
		ffnInp := g.like("ffn_inp"+l, "ADD", "", attn, x)
		cur = norm("ffn_norm"+l, "ffn_norm_w"+l, "ffn_norm_b"+l, "ffn_norm"+l, ffnInp)
		var act *ggTensorOut
		switch {
		case p.Arch == ggGPT2:
			fc := bias("ffn_up", g.mulMat("ffn_up"+l, w("up"+l, "f16", E, F), cur), l)
			act = g.like("ffn_gelu"+l, "UNARY", "GELU", fc)
		case p.FusedGateUp:
			gu := g.mulMat("gate_up"+l, w("gate_up"+l, "f16", E, 2*F), cur)
			rs := 2 * F * 4
			gate := g.view("gate"+l, "VIEW", gu, []int64{F, T}, []int64{4, rs}, 0)
			silu := g.like("gate_silu"+l, "UNARY", "SILU", gate)
			up := g.view("up"+l, "VIEW", gu, []int64{F, T}, []int64{4, rs}, F*4)
			act = g.like("ffn_act"+l, "MUL", "", silu, up)
		default:
			gate := g.mulMat("gate"+l, w("gate"+l, "f16", E, F), cur)
			silu := g.like("gate_silu"+l, "UNARY", "SILU", gate)
			up := g.mulMat("up"+l, w("up"+l, "f16", E, F), cur)
			act = g.like("ffn_act"+l, "MUL", "", silu, up)
		}
		down := bias("ffn_out", g.mulMat("ffn_out"+l, w("down"+l, "f16", F, E), act), l)
		x = g.like("l_out"+l, "ADD", "", down, ffnInp)
	}
	out := norm("result_norm_raw", "result_norm", "result_norm_b", "output_norm", x)
	if p.LMHead {
		out = g.mulMat("result_output", w("output", "f16", E, p.Vocab), out)
	}
	out.IsOutput = true
	all := append(g.leafs, g.nodes...)
	for i, t := range all {
		t.Index = i
		if i >= len(g.leafs) {
			t.ExecIndex = int64(i - len(g.leafs))
		}
	}
	doc := map[string]any{
		"format":    "ggml-alloc-trace/1",
		"config":    "gen",
		"params":    map[string]any{"n_embd": E, "n_head": H, "head_dim": hd, "n_ff": F, "n_tokens": T, "n_layer": p.Layers, "n_past": p.Past, "n_kv": nkv},
		"alignment": 32,
		"n_leafs":   len(g.leafs),
		"n_nodes":   len(g.nodes),
		"tensors":   all,
	}
	return json.Marshal(doc)
}
