package strided

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
)

// indexAddr returns the first byte of element idx of l.
func indexAddr(l Layout, idx []int64) int64 {
	a := l.Offset
	for k, i := range idx {
		a += i * l.Strides[k]
	}
	return a
}

// expectElems fails unless v's elements, in row-major order, start at want(idx) in l.
func expectElems(t *testing.T, what string, l, v Layout, want func(idx []int64) int64) {
	t.Helper()
	if v.Elem != l.Elem {
		t.Fatalf("%s of %v: elem %d", what, l, v.Elem)
	}
	var exp []int64
	testutil.EachIndex(v.Shape, func(idx []int64) { exp = append(exp, want(idx)) })
	if got := elemAddrs(v); !slices.Equal(got, exp) && !(len(got) == 0 && len(exp) == 0) {
		t.Fatalf("%s of %v = %v: elements %v, want %v", what, l, v, got, exp)
	}
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v, want %v", what, err, sentinel)
	}
}

func TestBuildersAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 20000 {
		l, size := randLayout(rng)
		orig := l.Clone()
		switch rng.IntN(7) {
		case 0:
			builderSlice(t, rng, l)
		case 1:
			builderSelect(t, rng, l)
		case 2:
			builderPermute(t, rng, l)
		case 3:
			builderExpand(t, rng, l, size)
		case 4:
			builderSplit(t, rng, l)
		case 5, 6:
			builderReshape(t, rng, l)
		}
		if !l.Equal(orig) {
			t.Fatalf("builder modified its receiver: %v, was %v", l, orig)
		}
	}
}

// builderSlice checks Slice of l on random bounds and steps against indexAddr.
func builderSlice(t *testing.T, rng *rand.Rand, l Layout) {
	nd := len(l.Shape)
	if nd == 0 {
		_, err := l.Slice(0, 0, 0, 1)
		wantErr(t, "slice of scalar", err, ErrOutOfBounds)
		return
	}
	dim := rng.IntN(nd)
	n := l.Shape[dim]
	start, stop := rng.Int64N(n+3)-1, rng.Int64N(n+3)-1
	step := rng.Int64N(7) - 3
	v, err := l.Slice(dim, start, stop, step)
	valid := step != 0 && ((step > 0 && 0 <= start && start <= stop && stop <= n) ||
		(step < 0 && -1 <= stop && stop <= start && start < n))
	if !valid {
		if err == nil {
			t.Fatalf("Slice(%d, %d, %d, %d) of %v accepted", dim, start, stop, step, l)
		}
		return
	}
	if err != nil {
		t.Fatalf("Slice(%d, %d, %d, %d) of %v: %v", dim, start, stop, step, l, err)
	}
	expectElems(t, "slice", l, v, func(idx []int64) int64 {
		o := slices.Clone(idx)
		o[dim] = start + idx[dim]*step
		return indexAddr(l, o)
	})
}

// builderSelect checks Select of l at a random index against indexAddr.
func builderSelect(t *testing.T, rng *rand.Rand, l Layout) {
	nd := len(l.Shape)
	if nd == 0 {
		return
	}
	dim := rng.IntN(nd)
	i := rng.Int64N(l.Shape[dim]+2) - 1
	v, err := l.Select(dim, i)
	if i < 0 || i >= l.Shape[dim] {
		wantErr(t, "select out of range", err, ErrOutOfBounds)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	expectElems(t, "select", l, v, func(idx []int64) int64 {
		return indexAddr(l, slices.Insert(slices.Clone(idx), dim, i))
	})
}

// builderPermute checks Permute and Transpose of l against indexAddr.
func builderPermute(t *testing.T, rng *rand.Rand, l Layout) {
	nd := len(l.Shape)
	perm := rng.Perm(nd)
	v, err := l.Permute(perm...)
	if err != nil {
		t.Fatal(err)
	}
	expectElems(t, "permute", l, v, func(idx []int64) int64 {
		o := make([]int64, nd)
		for k, p := range perm {
			o[p] = idx[k]
		}
		return indexAddr(l, o)
	})
	if nd >= 2 {
		a, b := rng.IntN(nd), rng.IntN(nd)
		v, err := l.Transpose(a, b)
		if err != nil {
			t.Fatal(err)
		}
		expectElems(t, "transpose", l, v, func(idx []int64) int64 {
			o := slices.Clone(idx)
			o[a], o[b] = o[b], o[a]
			return indexAddr(l, o)
		})
	}
}

// builderExpand checks Expand of l to a random shape against indexAddr, and that it loses no byte.
func builderExpand(t *testing.T, rng *rand.Rand, l Layout, size int64) {
	nd := len(l.Shape)
	lead := rng.IntN(3)
	shape := make([]int64, lead+nd)
	for k := range shape {
		if k < lead {
			shape[k] = rng.Int64N(4)
			continue
		}
		old := l.Shape[k-lead]
		switch {
		case rng.IntN(4) == 0:
			shape[k] = -1
		case old == 1:
			shape[k] = rng.Int64N(4)
		default:
			shape[k] = old
		}
	}
	v, err := l.Expand(shape...)
	if err != nil {
		t.Fatalf("Expand(%v) of %v: %v", shape, l, err)
	}
	expectElems(t, "expand", l, v, func(idx []int64) int64 {
		o := slices.Clone(idx[lead:])
		for k := range o {
			if l.Shape[k] == 1 {
				o[k] = 0
			}
		}
		return indexAddr(l, o)
	})
	if !oracleBits(v, size).IsSuperSet(oracleBits(l, size)) && !slices.Contains(shape, 0) {
		t.Fatalf("expand lost bytes")
	}
}

// builderSplit checks Split of l into random sizes against indexAddr, and a wrong sum.
func builderSplit(t *testing.T, rng *rand.Rand, l Layout) {
	nd := len(l.Shape)
	if nd == 0 {
		return
	}
	dim := rng.IntN(nd)
	var sizes []int64
	for left := l.Shape[dim]; left > 0; {
		s := 1 + rng.Int64N(left)
		sizes = append(sizes, s)
		left -= s
	}
	if rng.IntN(4) == 0 {
		sizes = append(sizes, 0)
	}
	parts, err := l.Split(dim, sizes...)
	if err != nil {
		t.Fatalf("Split(%d, %v) of %v: %v", dim, sizes, l, err)
	}
	start := int64(0)
	for p, v := range parts {
		first := start
		expectElems(t, "split", l, v, func(idx []int64) int64 {
			o := slices.Clone(idx)
			o[dim] += first
			return indexAddr(l, o)
		})
		start += sizes[p]
	}
	if len(sizes) > 0 {
		bad := slices.Clone(sizes)
		bad[0]++
		_, err := l.Split(dim, bad...)
		wantErr(t, "split sum", err, ErrShapeMismatch)
	}
}

// builderReshape checks Reshape of l to a random factorization against reshapeOracle.
func builderReshape(t *testing.T, rng *rand.Rand, l Layout) {
	elems, _ := l.NumElems()
	shape := randFactorization(rng, elems)
	v, err := l.Reshape(shape...)
	possible := reshapeOracle(l, shape)
	switch {
	case errors.Is(err, ErrNotExpressible):
		if possible {
			t.Fatalf("Reshape(%v) of %v: not expressible, but the oracle found strides", shape, l)
		}
	case err != nil:
		t.Fatalf("Reshape(%v) of %v: %v", shape, l, err)
	default:
		if !slices.Equal(v.Shape, shape) || !slices.Equal(elemAddrs(v), elemAddrs(l)) {
			t.Fatalf("Reshape(%v) of %v = %v: elements differ", shape, l, v)
		}
	}
}

// randFactorization returns a random shape with n elements (n small), sometimes with -1.
func randFactorization(rng *rand.Rand, n int64) []int64 {
	var shape []int64
	if n == 0 {
		shape = []int64{0}
		for range rng.IntN(3) {
			shape = append(shape, rng.Int64N(3))
		}
		rng.Shuffle(len(shape), func(i, j int) { shape[i], shape[j] = shape[j], shape[i] })
		return shape
	}
	for left := n; left > 1; {
		var divs []int64
		for d := int64(2); d <= left; d++ {
			if left%d == 0 {
				divs = append(divs, d)
			}
		}
		d := divs[rng.IntN(len(divs))]
		shape = append(shape, d)
		left /= d
	}
	for range rng.IntN(3) {
		shape = slices.Insert(shape, rng.IntN(len(shape)+1), 1)
	}
	return shape
}

// reshapeOracle decides whether the row-major elements of l can be laid out with shape by
// one strided layout. The stride of each dimension k of size > 1 is forced: it is the
// address of the element with index 1 in dimension k (0 elsewhere) minus that of element 0.
func reshapeOracle(l Layout, shape []int64) bool {
	addrs := elemAddrs(l)
	if len(addrs) <= 1 {
		return true
	}
	cand := Layout{Offset: addrs[0], Shape: shape, Strides: make([]int64, len(shape)), Elem: l.Elem}
	flat := int64(1)
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] > 1 {
			cand.Strides[k] = addrs[flat] - addrs[0]
		}
		flat *= shape[k]
	}
	return slices.Equal(elemAddrs(cand), addrs)
}

func TestBuilderTable(t *testing.T) {
	//      f32 matrix [3 4], dense: strides [16 4]
	//      byte 0   4   8   12
	//      row0 a00 a01 a02 a03
	//      row1 a10 a11 a12 a13   (+16)
	//      row2 a20 a21 a22 a23   (+32)
	m, _ := Dense(0, []int64{3, 4}, 4)
	type result struct {
		l   Layout
		err error
	}
	one := func(l Layout, err error) result { return result{l, err} }
	L := func(off int64, shape, strides []int64) Layout {
		return Layout{Offset: off, Shape: shape, Strides: strides, Elem: 4}
	}
	cases := []struct {
		name string
		got  result
		want Layout
		err  error
	}{
		// Columns 1 and 3: a01 a03 / a11 a13 / a21 a23.
		{"slice cols 1:4:2", one(m.Slice(1, 1, 4, 2)), L(4, []int64{3, 2}, []int64{16, 8}), nil},
		// Rows backwards: row2 row1 row0.
		{"slice rows reversed", one(m.Slice(0, 2, -1, -1)), L(32, []int64{3, 4}, []int64{-16, 4}), nil},
		{"slice empty", one(m.Slice(0, 3, 3, 1)), L(0, []int64{0, 4}, []int64{16, 4}), nil},
		{"slice step 0", one(m.Slice(0, 0, 3, 0)), Layout{}, ErrInvalidArgument},
		{"slice past end", one(m.Slice(1, 0, 5, 1)), Layout{}, ErrOutOfBounds},
		{"slice bad dim", one(m.Slice(2, 0, 1, 1)), Layout{}, ErrOutOfBounds},
		// Column 2: a02 a12 a22.
		{"select col 2", one(m.Select(1, 2)), L(8, []int64{3}, []int64{16}), nil},
		{"select row 4", one(m.Select(0, 4)), Layout{}, ErrOutOfBounds},
		{"transpose", one(m.Transpose(0, 1)), L(0, []int64{4, 3}, []int64{4, 16}), nil},
		{"permute", one(m.Permute(1, 0)), L(0, []int64{4, 3}, []int64{4, 16}), nil},
		{"permute repeat", one(m.Permute(0, 0)), Layout{}, ErrInvalidArgument},
		{"permute short", one(m.Permute(0)), Layout{}, ErrInvalidArgument},
		{"permute range", one(m.Permute(0, 2)), Layout{}, ErrOutOfBounds},
		{"reshape [2 6]", one(m.Reshape(2, 6)), L(0, []int64{2, 6}, []int64{24, 4}), nil},
		{"reshape [-1]", one(m.Reshape(-1)), L(0, []int64{12}, []int64{4}), nil},
		{"reshape [5 -1]", one(m.Reshape(5, -1)), Layout{}, ErrShapeMismatch},
		{"reshape [-1 -1]", one(m.Reshape(-1, -1)), Layout{}, ErrInvalidArgument},
		{"reshape [13]", one(m.Reshape(13)), Layout{}, ErrShapeMismatch},
		{"expand row", one(L(0, []int64{1, 4}, []int64{16, 4}).Expand(2, 3, 4)), L(0, []int64{2, 3, 4}, []int64{0, 0, 4}), nil},
		{"expand mismatch", one(m.Expand(3, 5)), Layout{}, ErrShapeMismatch},
		{"expand fewer", one(m.Expand(12)), Layout{}, ErrShapeMismatch},
		{"as_strided", one(m.AsStrided(4, []int64{2, 2}, []int64{16, 4})), L(4, []int64{2, 2}, []int64{16, 4}), nil},
		{"as_strided bad", one(m.AsStrided(4, []int64{2, 2}, []int64{16})), Layout{}, ErrInvalidLayout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err != nil {
				wantErr(t, c.name, c.got.err, c.err)
				return
			}
			if c.got.err != nil {
				t.Fatal(c.got.err)
			}
			if !c.got.l.Equal(c.want) {
				t.Errorf("got %v, want %v", c.got.l, c.want)
			}
		})
	}
	// Transposed matrix cannot be flattened without a copy: a00 a10 a20 a01 ... is not one stride.
	tr, _ := m.Transpose(0, 1)
	_, err := tr.Reshape(12)
	wantErr(t, "reshape of transpose", err, ErrNotExpressible)
	// Split the rows of a fused QKV [2 12] f32 into three [2 4] column blocks.
	qkv, _ := Dense(0, []int64{2, 12}, 4)
	parts, err := qkv.Split(1, 4, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if want := L(int64(16*i), []int64{2, 4}, []int64{48, 4}); !p.Equal(want) {
			t.Errorf("part %d = %v, want %v", i, p, want)
		}
	}
	_, err = qkv.Split(1, 4, -1, 9)
	wantErr(t, "split negative", err, ErrInvalidArgument)
}
