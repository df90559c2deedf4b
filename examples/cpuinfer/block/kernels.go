package block

import (
	"fmt"
	"math"
)

// The kernels. Each validates the shapes it is given (ErrLayout), then
// reads and writes only through the tensors' offsets and strides. Every
// product is rounded to float32 explicitly — float32(a*b) — before it is
// added, which forbids the compiler from fusing a multiply-add: the same
// kernel over the same values gives the same bits on every run, whatever
// the strides, so an arena run can be compared with the reference bit for
// bit. Transcendentals go through float64 math and are rounded once.

// rmsEps is the RMSNorm epsilon.
const rmsEps float32 = 1e-5

// embed writes row tokens[i] of table ([V, D], dense) into out[i].
func embed(out Tensor, table []float32, tokens []int) error {
	if len(out.Shape) != 2 {
		return fmt.Errorf("%w: embed output shape %v", ErrLayout, out.Shape)
	}
	n, d := out.Shape[0], out.Shape[1]
	if err := out.checkShape("embed output", len(tokens), d); err != nil {
		return err
	}
	for i := range n {
		tok := tokens[i]
		if tok < 0 || (tok+1)*d > len(table) {
			return fmt.Errorf("%w: token %d outside the embedding table", ErrLayout, tok)
		}
		row := table[tok*d : (tok+1)*d]
		o := out.Off + i*out.Strides[0]
		for j, v := range row {
			out.Data[o+j*out.Strides[1]] = v
		}
	}
	return nil
}

// RMSNorm writes out[i] = in[i] / √(mean(in[i]²) + ε) · w, for in and out
// [n, D] (out may be in).
func RMSNorm(out, in Tensor, w []float32) error {
	if len(in.Shape) != 2 {
		return fmt.Errorf("%w: rmsnorm input shape %v", ErrLayout, in.Shape)
	}
	n, d := in.Shape[0], in.Shape[1]
	if err := in.checkShape("rmsnorm input", n, d); err != nil {
		return err
	}
	if err := out.checkShape("rmsnorm output", n, d); err != nil {
		return err
	}
	if len(w) != d {
		return fmt.Errorf("%w: rmsnorm scale has %d elements, want %d", ErrLayout, len(w), d)
	}
	for i := range n {
		ii, oi := in.Off+i*in.Strides[0], out.Off+i*out.Strides[0]
		var ss float32
		for j := range d {
			v := in.Data[ii+j*in.Strides[1]]
			ss += float32(v * v)
		}
		r := float32(1 / math.Sqrt(float64(ss/float32(d)+rmsEps)))
		for j := range d {
			v := in.Data[ii+j*in.Strides[1]]
			out.Data[oi+j*out.Strides[1]] = float32(float32(v*r) * w[j])
		}
	}
	return nil
}

// matMul writes out = in · w for in [n, K], w [K, M] dense and out [n, M].
// out must not overlap in. Each out[i][j] is Σ_k in[i][k]·w[k][j] summed in
// order of k.
func matMul(out, in Tensor, w []float32) error {
	if len(in.Shape) != 2 || len(out.Shape) != 2 {
		return fmt.Errorf("%w: matmul shapes %v, %v", ErrLayout, in.Shape, out.Shape)
	}
	n, k, m := in.Shape[0], in.Shape[1], out.Shape[1]
	if err := in.checkShape("matmul input", n, k); err != nil {
		return err
	}
	if err := out.checkShape("matmul output", n, m); err != nil {
		return err
	}
	if len(w) != k*m {
		return fmt.Errorf("%w: matmul weight has %d elements, want %d×%d", ErrLayout, len(w), k, m)
	}
	os := out.Strides[1]
	for i := range n {
		oi := out.Off + i*out.Strides[0]
		for j := range m {
			out.Data[oi+j*os] = 0
		}
		ii := in.Off + i*in.Strides[0]
		for kk := range k {
			a := in.Data[ii+kk*in.Strides[1]]
			wr := w[kk*m : (kk+1)*m]
			o := oi
			for _, b := range wr {
				out.Data[o] += float32(a * b)
				o += os
			}
		}
	}
	return nil
}

// rope rotates, in place, each pair (2p, 2p+1) of every head of x [n, H,
// Dh] by the angle of its position p0+i (tables [positions, Dh/2]).
func rope(x Tensor, p0 int, cos, sin []float32) error {
	if len(x.Shape) != 3 {
		return fmt.Errorf("%w: rope shape %v", ErrLayout, x.Shape)
	}
	n, h, dh := x.Shape[0], x.Shape[1], x.Shape[2]
	if err := x.checkShape("rope", n, h, dh); err != nil {
		return err
	}
	half := dh / 2
	if dh%2 != 0 || (p0+n)*half > len(cos) || len(sin) != len(cos) {
		return fmt.Errorf("%w: rope of head width %d at positions [%d, %d)", ErrLayout, dh, p0, p0+n)
	}
	for i := range n {
		cs, sn := cos[(p0+i)*half:], sin[(p0+i)*half:]
		for hh := range h {
			base := x.Off + i*x.Strides[0] + hh*x.Strides[1]
			for p := range half {
				ia, ib := base+2*p*x.Strides[2], base+(2*p+1)*x.Strides[2]
				a, b := x.Data[ia], x.Data[ib]
				c, s := cs[p], sn[p]
				x.Data[ia] = float32(a*c) - float32(b*s)
				x.Data[ib] = float32(a*s) + float32(b*c)
			}
		}
	}
	return nil
}

// Segment is a run of KV-cache positions [Lo, Lo+rows) whose keys and
// values are K and V, each [rows, H, Dh]: an arena chunk, or chunks
// offloaded to host memory.
type Segment struct {
	Lo   int
	K, V Tensor
}

// Attention writes, for each query i of q [n, H, Dh] at position p0+i and
// each head, the softmax-weighted sum of the values at positions [0,
// p0+i] (causal) into out [n, H, Dh]. kv lists the cache's positions in
// increasing order without gaps from 0. out must not overlap q or kv.
// Scores are scaled by 1/√Dh; softmax subtracts the row maximum.
func Attention(out, q Tensor, p0 int, kv []Segment) error {
	if len(q.Shape) != 3 {
		return fmt.Errorf("%w: attention query shape %v", ErrLayout, q.Shape)
	}
	n, h, dh := q.Shape[0], q.Shape[1], q.Shape[2]
	if err := q.checkShape("attention query", n, h, dh); err != nil {
		return err
	}
	if err := out.checkShape("attention output", n, h, dh); err != nil {
		return err
	}
	next := 0
	for si, sg := range kv {
		if sg.Lo != next || len(sg.K.Shape) != 3 {
			return fmt.Errorf("%w: kv segment %d starts at %d, want %d", ErrLayout, si, sg.Lo, next)
		}
		rows := sg.K.Shape[0]
		if err := sg.K.checkShape("attention keys", rows, h, dh); err != nil {
			return err
		}
		if err := sg.V.checkShape("attention values", rows, h, dh); err != nil {
			return err
		}
		next += rows
	}
	if next < p0+n {
		return fmt.Errorf("%w: kv cache holds %d positions, queries reach %d", ErrLayout, next, p0+n)
	}
	scale := float32(1 / math.Sqrt(float64(dh)))
	scores := make([]float32, p0+n)
	for i := range n {
		last := p0 + i // attends to positions [0, last]
		for hh := range h {
			qb := q.Off + i*q.Strides[0] + hh*q.Strides[1]
			ob := out.Off + i*out.Strides[0] + hh*out.Strides[1]
			maxScore := float32(math.Inf(-1))
			for _, sg := range kv {
				for r := 0; r < sg.K.Shape[0] && sg.Lo+r <= last; r++ {
					kb := sg.K.Off + r*sg.K.Strides[0] + hh*sg.K.Strides[1]
					var dot float32
					for d := range dh {
						dot += float32(q.Data[qb+d*q.Strides[2]] * sg.K.Data[kb+d*sg.K.Strides[2]])
					}
					s := float32(dot * scale)
					scores[sg.Lo+r] = s
					maxScore = max(maxScore, s)
				}
			}
			var sum float32
			for j := 0; j <= last; j++ {
				e := float32(math.Exp(float64(scores[j] - maxScore)))
				scores[j] = e
				sum += e
			}
			for d := range dh {
				out.Data[ob+d*out.Strides[2]] = 0
			}
			for _, sg := range kv {
				for r := 0; r < sg.V.Shape[0] && sg.Lo+r <= last; r++ {
					p := scores[sg.Lo+r] / sum
					vb := sg.V.Off + r*sg.V.Strides[0] + hh*sg.V.Strides[1]
					for d := range dh {
						out.Data[ob+d*out.Strides[2]] += float32(p * sg.V.Data[vb+d*sg.V.Strides[2]])
					}
				}
			}
		}
	}
	return nil
}

// add writes out = a + b elementwise for [n, D] tensors (out may be a).
func add(out, a, b Tensor) error {
	return zip2("add", out, a, b, func(x, y float32) float32 { return x + y })
}

// siluMul writes out = silu(g) · u elementwise, silu(v) = v·σ(v), for
// [n, F] tensors (out may be g): the gated feed-forward activation.
func siluMul(out, g, u Tensor) error {
	return zip2("silu·up", out, g, u, func(x, y float32) float32 {
		sig := float32(1 / (1 + math.Exp(-float64(x))))
		return float32(float32(x*sig) * y)
	})
}

func zip2(name string, out, a, b Tensor, f func(x, y float32) float32) error {
	if len(a.Shape) != 2 {
		return fmt.Errorf("%w: %s shape %v", ErrLayout, name, a.Shape)
	}
	n, d := a.Shape[0], a.Shape[1]
	for _, t := range []Tensor{out, a, b} {
		if err := t.checkShape(name, n, d); err != nil {
			return err
		}
	}
	for i := range n {
		oi, ai, bi := out.Off+i*out.Strides[0], a.Off+i*a.Strides[0], b.Off+i*b.Strides[0]
		for j := range d {
			out.Data[oi+j*out.Strides[1]] = f(a.Data[ai+j*a.Strides[1]], b.Data[bi+j*b.Strides[1]])
		}
	}
	return nil
}

// copyInto copies src into dst, elementwise, for tensors of the same shape and
// rank 1 to 3.
func copyInto(dst, src Tensor) error {
	r := len(src.Shape)
	if r < 1 || r > 3 {
		return fmt.Errorf("%w: copy of rank %d", ErrLayout, r)
	}
	shape := [3]int{1, 1, 1}
	var ss, ds [3]int
	copy(shape[3-r:], src.Shape)
	copy(ss[3-r:], src.Strides)
	if err := src.checkShape("copy source", src.Shape...); err != nil {
		return err
	}
	if err := dst.checkShape("copy destination", src.Shape...); err != nil {
		return err
	}
	copy(ds[3-r:], dst.Strides)
	for i := range shape[0] {
		for j := range shape[1] {
			so, do := src.Off+i*ss[0]+j*ss[1], dst.Off+i*ds[0]+j*ds[1]
			for k := range shape[2] {
				dst.Data[do+k*ds[2]] = src.Data[so+k*ss[2]]
			}
		}
	}
	return nil
}

// argmax returns the index of the first largest element of a 1-D tensor.
func argmax(t Tensor) (int, error) {
	if len(t.Shape) != 1 || t.Shape[0] == 0 {
		return 0, fmt.Errorf("%w: argmax of shape %v", ErrLayout, t.Shape)
	}
	if err := t.checkShape("argmax", t.Shape[0]); err != nil {
		return 0, err
	}
	best, arg := t.Data[t.Off], 0
	for i := 1; i < t.Shape[0]; i++ {
		if v := t.Data[t.Off+i*t.Strides[0]]; v > best {
			best, arg = v, i
		}
	}
	return arg, nil
}
