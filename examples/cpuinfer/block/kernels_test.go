package block

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// at returns the flat index of element idx of t.
func at(t Tensor, idx ...int) int {
	o := t.Off
	for k, i := range idx {
		o += i * t.Strides[k]
	}
	return o
}

// each calls f with every index of shape (rank 1 to 3) in row-major order.
func each(shape []int, f func(idx ...int)) {
	switch len(shape) {
	case 1:
		for i := range shape[0] {
			f(i)
		}
	case 2:
		for i := range shape[0] {
			for j := range shape[1] {
				f(i, j)
			}
		}
	case 3:
		for i := range shape[0] {
			for j := range shape[1] {
				for k := range shape[2] {
					f(i, j, k)
				}
			}
		}
	}
}

func randomDense(rng *rand.Rand, shape ...int) Tensor {
	t := newDense(shape...)
	for i := range t.Data {
		t.Data[i] = float32(2*rng.Float64() - 1)
	}
	return t
}

// sameWhenStrided runs a kernel twice, dense into out and strided (into
// sout, from restrided inputs); both runs must succeed and write the same
// bits.
func sameWhenStrided(t *testing.T, name string, out, sout Tensor, dense, strided func() error) {
	t.Helper()
	if err := dense(); err != nil {
		t.Fatal(err)
	}
	if err := strided(); err != nil {
		t.Fatal(err)
	}
	sameBits(t, name, sout, out)
}

// restride copies t into a fresh slice laid out with its dimensions in a
// random storage order, random padding after every dimension, and
// possibly a negative stride: the same values behind other strides, as a
// view of an arena buffer would present them.
func restride(rng *rand.Rand, t Tensor) Tensor {
	r := len(t.Shape)
	order := rng.Perm(r) // order[0] is the outermost in storage
	strides := make([]int, r)
	s := 1 + rng.IntN(2)
	for k := r - 1; k >= 0; k-- {
		d := order[k]
		strides[d] = s
		s *= t.Shape[d] + rng.IntN(3)
	}
	out := Tensor{Data: make([]float32, s+rng.IntN(5)), Shape: append([]int(nil), t.Shape...), Strides: strides}
	if d := rng.IntN(r + 1); d < r && t.Shape[d] > 1 {
		out.Off += (t.Shape[d] - 1) * strides[d]
		out.Strides[d] = -strides[d]
	}
	for i := range out.Data {
		out.Data[i] = float32(math.NaN()) // padding must never be read
	}
	each(t.Shape, func(idx ...int) { out.Data[at(out, idx...)] = t.Data[at(t, idx...)] })
	return out
}

// sameBits fails unless a and b hold the same bits at every index.
func sameBits(t *testing.T, what string, a, b Tensor) {
	t.Helper()
	each(a.Shape, func(idx ...int) {
		x, y := a.Data[at(a, idx...)], b.Data[at(b, idx...)]
		if math.Float32bits(x) != math.Float32bits(y) {
			t.Fatalf("%s: element %v is %v strided, %v dense", what, idx, x, y)
		}
	})
}

// near fails unless got is within tol·(scale+1) of the float64 oracle.
func near(t *testing.T, what string, got Tensor, want func(idx ...int) (value, scale float64)) {
	t.Helper()
	each(got.Shape, func(idx ...int) {
		w, s := want(idx...)
		g := float64(got.Data[at(got, idx...)])
		if math.IsNaN(g) || math.Abs(g-w) > 1e-5*(s+1) {
			t.Fatalf("%s: element %v = %v, oracle %v", what, idx, g, w)
		}
	})
}

func f64(t Tensor, idx ...int) float64 { return float64(t.Data[at(t, idx...)]) }

// TestKernelsStridedAndOracle runs every kernel on dense tensors and on the
// same values behind random strides: the bits must agree (what the arena
// run's bit-identity rests on), and both must match a float64 oracle.
func TestKernelsStridedAndOracle(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n, d, m, h := 1+rng.IntN(4), 2*(1+rng.IntN(4)), 1+rng.IntN(6), 1+rng.IntN(3)
		dh := d

		// matMul.
		in := randomDense(rng, n, d)
		wt := randomDense(rng, d, m).Data
		out := newDense(n, m)
		sout := restride(rng, out)
		sameWhenStrided(t, "matmul", out, sout,
			func() error { return matMul(out, in, wt) },
			func() error { return matMul(sout, restride(rng, in), wt) })
		near(t, "matmul", out, func(idx ...int) (float64, float64) {
			var v, s float64
			for k := range d {
				p := f64(in, idx[0], k) * float64(wt[k*m+idx[1]])
				v, s = v+p, s+math.Abs(p)
			}
			return v, s
		})

		// RMSNorm.
		scale := randomDense(rng, d).Data
		out = newDense(n, d)
		sout = restride(rng, newDense(n, d))
		sameWhenStrided(t, "rmsnorm", out, sout,
			func() error { return RMSNorm(out, in, scale) },
			func() error { return RMSNorm(sout, restride(rng, in), scale) })
		near(t, "rmsnorm", out, func(idx ...int) (float64, float64) {
			var ss float64
			for k := range d {
				ss += f64(in, idx[0], k) * f64(in, idx[0], k)
			}
			return f64(in, idx...) / math.Sqrt(ss/float64(d)+float64(rmsEps)) * float64(scale[idx[1]]), 10
		})

		// rope, in place.
		p0 := rng.IntN(5)
		x := randomDense(rng, n, h, dh)
		cos, sin := ropeTables(p0+n, dh)
		orig := Tensor{Data: append([]float32(nil), x.Data...), Shape: x.Shape, Strides: x.Strides}
		sx := restride(rng, x)
		if err := rope(x, p0, cos, sin); err != nil {
			t.Fatal(err)
		}
		if err := rope(sx, p0, cos, sin); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "rope", sx, x)
		near(t, "rope", x, func(idx ...int) (float64, float64) {
			i, hh, e := idx[0], idx[1], idx[2]
			pr := e / 2
			c, s := float64(cos[(p0+i)*dh/2+pr]), float64(sin[(p0+i)*dh/2+pr])
			a, b := f64(orig, i, hh, 2*pr), f64(orig, i, hh, 2*pr+1)
			if e%2 == 0 {
				return a*c - b*s, 2
			}
			return a*s + b*c, 2
		})

		// Attention over a cache split into segments at random points.
		total := p0 + n
		q := randomDense(rng, n, h, dh)
		kc, vc := randomDense(rng, total, h, dh), randomDense(rng, total, h, dh)
		var ssegs []Segment
		for lo := 0; lo < total; {
			hi := min(total, lo+1+rng.IntN(3))
			ssegs = append(ssegs, Segment{Lo: lo, K: restride(rng, kc.Rows(lo, hi)), V: restride(rng, vc.Rows(lo, hi))})
			lo = hi
		}
		out = newDense(n, h, dh)
		sout = restride(rng, newDense(n, h, dh))
		sameWhenStrided(t, "attention", out, sout,
			func() error { return Attention(out, q, p0, []Segment{{Lo: 0, K: kc, V: vc}}) },
			func() error { return Attention(sout, restride(rng, q), p0, ssegs) })
		near(t, "attention", out, func(idx ...int) (float64, float64) {
			i, hh, e := idx[0], idx[1], idx[2]
			last := p0 + i
			sc := make([]float64, last+1)
			best := math.Inf(-1)
			for j := range sc {
				for k := range dh {
					sc[j] += f64(q, i, hh, k) * f64(kc, j, hh, k)
				}
				sc[j] /= math.Sqrt(float64(dh))
				best = max(best, sc[j])
			}
			var sum, v float64
			for j := range sc {
				sc[j] = math.Exp(sc[j] - best)
				sum += sc[j]
			}
			for j := range sc {
				v += sc[j] / sum * f64(vc, j, hh, e)
			}
			return v, 10
		})

		// siluMul and add, out aliasing the first operand as in the arena run.
		g, u := randomDense(rng, n, m), randomDense(rng, n, m)
		g0 := Tensor{Data: append([]float32(nil), g.Data...), Shape: g.Shape, Strides: g.Strides}
		sg, su := restride(rng, g), restride(rng, u)
		if err := siluMul(g, g, u); err != nil {
			t.Fatal(err)
		}
		if err := siluMul(sg, sg, su); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "silu·up", sg, g)
		near(t, "silu·up", g, func(idx ...int) (float64, float64) {
			v := f64(g0, idx...)
			return v / (1 + math.Exp(-v)) * f64(u, idx...), 2
		})
		a, b := randomDense(rng, n, m), randomDense(rng, n, m)
		sum := newDense(n, m)
		if err := add(sum, a, b); err != nil {
			t.Fatal(err)
		}
		sa := restride(rng, a)
		if err := add(sa, sa, restride(rng, b)); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "add", sa, sum)
		near(t, "add", sum, func(idx ...int) (float64, float64) { return f64(a, idx...) + f64(b, idx...), 2 })

		// copyInto and argmax.
		cp := restride(rng, newDense(n, h, dh))
		if err := copyInto(cp, q); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "copy", cp, q)
		row := restride(rng, randomDense(rng, 1+rng.IntN(9)))
		got, err := argmax(row)
		if err != nil {
			t.Fatal(err)
		}
		for i := range row.Shape[0] {
			if v, best := row.Data[at(row, i)], row.Data[at(row, got)]; v > best || (v == best && i < got) {
				t.Fatalf("argmax %d, but element %d is %v >= %v", got, i, v, best)
			}
		}
	}
}

func ropeTables(positions, dh int) (cos, sin []float32) {
	half := dh / 2
	cos, sin = make([]float32, positions*half), make([]float32, positions*half)
	for p := range positions {
		for i := range half {
			a := float64(p) * math.Pow(10000, -float64(2*i)/float64(dh))
			cos[p*half+i], sin[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return cos, sin
}

// TestKernelsRejectBadShapes: every kernel refuses mismatched shapes and
// tensors that address outside their data, with ErrLayout, writing nothing.
func TestKernelsRejectBadShapes(t *testing.T) {
	a := newDense(2, 4)
	short := Tensor{Data: make([]float32, 7), Shape: []int{2, 4}, Strides: []int{4, 1}}
	neg := Tensor{Data: make([]float32, 8), Shape: []int{2, 4}, Strides: []int{-4, 1}}
	cases := map[string]error{
		"matmul k":        matMul(newDense(2, 3), a, make([]float32, 4*2)),
		"matmul short":    matMul(newDense(2, 3), short, make([]float32, 4*3)),
		"rmsnorm scale":   RMSNorm(a, a, make([]float32, 3)),
		"rmsnorm neg":     RMSNorm(a, neg, make([]float32, 4)),
		"add shapes":      add(a, a, newDense(2, 3)),
		"silu rank":       siluMul(newDense(8), newDense(8), newDense(8)),
		"rope odd":        rope(newDense(1, 1, 3), 0, make([]float32, 8), make([]float32, 8)),
		"rope positions":  rope(newDense(2, 1, 4), 3, make([]float32, 8), make([]float32, 8)),
		"embed token":     embed(a, make([]float32, 4*3), []int{0, 3}),
		"embed count":     embed(a, make([]float32, 4*3), []int{0}),
		"copy rank":       copyInto(newDense(1, 1, 1, 1), newDense(1, 1, 1, 1)),
		"copy shape":      copyInto(newDense(2, 3), a),
		"attention short": Attention(newDense(2, 1, 2), newDense(2, 1, 2), 1, []Segment{{Lo: 0, K: newDense(2, 1, 2), V: newDense(2, 1, 2)}}),
		"attention gap":   Attention(newDense(1, 1, 2), newDense(1, 1, 2), 0, []Segment{{Lo: 1, K: newDense(1, 1, 2), V: newDense(1, 1, 2)}}),
	}
	for name, err := range cases {
		if !errors.Is(err, ErrLayout) {
			t.Errorf("%s: %v, want ErrLayout", name, err)
		}
	}
	if _, err := argmax(newDense(0)); !errors.Is(err, ErrLayout) {
		t.Errorf("argmax of nothing: %v", err)
	}
	for i, v := range a.Data {
		if v != 0 {
			t.Fatalf("a rejected call wrote element %d", i)
		}
	}
}
