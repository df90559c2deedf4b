package block

import "fmt"

// ReferenceStats are the reference run's memory figures.
type ReferenceStats struct {
	// Tensors is how many activation tensors the run made, each with its
	// own Go slice; TotalBytes their sizes summed. Nothing is reused, so
	// TotalBytes is the memory a no-reuse allocator would need.
	Tensors    int
	TotalBytes int64
}

// Reference runs the model on the host, in program order, with every
// tensor in its own Go slice: no arena, no views, no engines. The fused
// projections are computed into their own slices and then copied into
// separate Q, K, V (and gate, up) tensors; each layer's KV cache is one
// [T+S, H, Dh] slice. It is the oracle the arena run must match bit for bit.
func Reference(w *Weights) (*Result, ReferenceStats, error) {
	c := w.Config
	if err := c.Validate(); err != nil {
		return nil, ReferenceStats{}, err
	}
	var st ReferenceStats
	alloc := func(shape ...int) Tensor {
		t := newDense(shape...)
		st.Tensors++
		st.TotalBytes += t.Bytes()
		return t
	}
	res := newResult(c)
	copy(res.Tokens, w.Prompt)
	d, h, dh, f := c.Dim, c.Heads, c.HeadDim(), c.FFN
	kc := make([]Tensor, c.Layers)
	vc := make([]Tensor, c.Layers)
	for l := range c.Layers {
		kc[l] = alloc(c.Positions(), h, dh)
		vc[l] = alloc(c.Positions(), h, dh)
	}
	for s := 0; s <= c.Steps; s++ {
		n, p0 := c.stepTokens(s)
		x := alloc(n, d)
		if err := embed(x, w.Embed, res.Tokens[p0:p0+n]); err != nil {
			return nil, st, err
		}
		for l, lw := range w.Layers {
			hn := alloc(n, d)
			qkv := alloc(n, 3*d)
			q, k, v := alloc(n, h, dh), alloc(n, h, dh), alloc(n, h, dh)
			attn := alloc(n, h, dh)
			o := alloc(n, d)
			x1 := alloc(n, d)
			hn2 := alloc(n, d)
			gu := alloc(n, 2*f)
			gate, up := alloc(n, f), alloc(n, f)
			act := alloc(n, f)
			down := alloc(n, d)
			x2 := alloc(n, d)
			steps := []func() error{
				func() error { return RMSNorm(hn, x, lw.Norm1) },
				func() error { return matMul(qkv, hn, lw.QKV) },
				func() error { return copyInto(q, columns(qkv, 0, d).Reshape3(h, dh)) },
				func() error { return copyInto(k, columns(qkv, d, d).Reshape3(h, dh)) },
				func() error { return copyInto(v, columns(qkv, 2*d, d).Reshape3(h, dh)) },
				func() error { return rope(q, p0, w.Cos, w.Sin) },
				func() error { return rope(k, p0, w.Cos, w.Sin) },
				func() error { return copyInto(kc[l].Rows(p0, p0+n), k) },
				func() error { return copyInto(vc[l].Rows(p0, p0+n), v) },
				func() error {
					seg := Segment{Lo: 0, K: kc[l].Rows(0, p0+n), V: vc[l].Rows(0, p0+n)}
					return Attention(attn, q, p0, []Segment{seg})
				},
				func() error { return matMul(o, rowMajor(attn.Data, n, d), lw.Out) },
				func() error { return add(x1, x, o) },
				func() error { return RMSNorm(hn2, x1, lw.Norm2) },
				func() error { return matMul(gu, hn2, lw.GateUp) },
				func() error { return copyInto(gate, columns(gu, 0, f)) },
				func() error { return copyInto(up, columns(gu, f, f)) },
				func() error { return siluMul(act, gate, up) },
				func() error { return matMul(down, act, lw.Down) },
				func() error { return add(x2, x1, down) },
			}
			for i, op := range steps {
				if err := op(); err != nil {
					return nil, st, fmt.Errorf("reference step %d layer %d op %d: %w", s, l, i, err)
				}
			}
			x = x2
		}
		hf := alloc(n, d)
		logits := alloc(n, c.Vocab)
		if err := RMSNorm(hf, x, w.Norm); err != nil {
			return nil, st, err
		}
		if err := matMul(logits, hf, w.Head); err != nil {
			return nil, st, err
		}
		last := logits.Row(n - 1)
		if err := copyInto(rowMajor(res.Logits[s], c.Vocab), last); err != nil {
			return nil, st, err
		}
		next, err := argmax(last)
		if err != nil {
			return nil, st, err
		}
		res.Next[s] = next
		if s < c.Steps {
			res.Tokens[c.Prompt+s] = nextToken(w, s, next)
		}
	}
	for l := range c.Layers {
		copy(res.K[l], kc[l].Data)
		copy(res.V[l], vc[l].Data)
	}
	return res, st, nil
}

// nextToken is the token fed at decode step s+1: the argmax of step s, or
// the forced token.
func nextToken(w *Weights, s, argmax int) int {
	if w.Config.Forced {
		return w.ForcedTokens[s]
	}
	return argmax
}

// columns returns columns [lo, lo+n) of a 2-D tensor.
func columns(t Tensor, lo, n int) Tensor {
	return Tensor{Data: t.Data, Off: t.Off + lo*t.Strides[1], Shape: []int{t.Shape[0], n}, Strides: t.Strides}
}
