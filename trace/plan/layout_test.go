package plan

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/strided"
)

// elements calls f with the byte address of every element of l, in
// row-major order.
func elements(l strided.Layout, f func(addr int64)) {
	testutil.LayoutElements(l.Offset, l.Shape, l.Strides, f)
}

// mapped is the slow model of a relayout: the address in target of the
// element of nat at address a.
func mapped(nat, target strided.Layout, a int64) int64 {
	sq := nat.Squeeze()
	shape, dense := sq.Shape, sq.Strides
	tstrides := target.Squeeze().Strides
	rem := (a - nat.Offset) / nat.Elem
	out := target.Offset
	for k := range shape {
		i := rem / (dense[k] / nat.Elem)
		rem %= dense[k] / nat.Elem
		out += i * tstrides[k]
	}
	return out
}

// checkRelayout verifies that v2 = relayout(v) walks, element by element,
// the target addresses of the elements v walks.
func checkRelayout(t *testing.T, v, nat, target, v2 strided.Layout) {
	t.Helper()
	var want, got []int64
	elements(v, func(a int64) { want = append(want, mapped(nat, target, a)) })
	elements(v2, func(a int64) { got = append(got, a) })
	if !slices.Equal(want, got) {
		t.Fatalf("relayout of %v from %v onto %v = %v: addresses %v, want %v", v, nat, target, v2, got, want)
	}
}

func randTarget(rng *rand.Rand, nat strided.Layout) strided.Layout {
	// A strided host footprint with nat's shape: each dimension's stride at
	// least the extent of the ones inside it, with random gaps.
	t := strided.Layout{Offset: rng.Int64N(4) * nat.Elem, Shape: append([]int64(nil), nat.Shape...),
		Strides: make([]int64, len(nat.Shape)), Elem: nat.Elem}
	s := nat.Elem * (1 + rng.Int64N(2))
	for k := len(nat.Shape) - 1; k >= 0; k-- {
		t.Strides[k] = s
		s = s*max(nat.Shape[k], 1) + rng.Int64N(3)*nat.Elem
	}
	return t
}

func TestRelayoutOfDerivedViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := range 2000 {
		dims := 1 + rng.IntN(3)
		shape := make([]int64, dims)
		for k := range shape {
			shape[k] = 1 + rng.Int64N(4)
		}
		elem := int64(1 + rng.IntN(4))
		nat, err := strided.Dense(0, shape, elem)
		if err != nil {
			t.Fatal(err)
		}
		target := randTarget(rng, nat)
		// Views a kernel takes of a tensor: slices, selects, permutations.
		v := nat
		for range rng.IntN(3) {
			dim := rng.IntN(len(v.Shape) + 1)
			if dim >= len(v.Shape) {
				if len(v.Shape) > 1 {
					perm := rng.Perm(len(v.Shape))
					v, err = v.Permute(perm...)
				}
			} else if n := v.Shape[dim]; n > 1 && rng.IntN(2) == 0 {
				start := rng.Int64N(n)
				v, err = v.Slice(dim, start, n, 1+rng.Int64N(2))
			} else if n > 0 && len(v.Shape) > 1 {
				v, err = v.Select(dim, rng.Int64N(n))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		v2, ok := relayout(v, nat, target)
		if !ok {
			t.Fatalf("iter %d: view %v of %v not expressible on %v", iter, v, nat, target)
		}
		checkRelayout(t, v, nat, target, v2)
	}
}

func TestRelayoutRandomViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	accepted, rejected := 0, 0
	for range 5000 {
		shape := []int64{1 + rng.Int64N(4), 1 + rng.Int64N(4)}
		if rng.IntN(3) == 0 {
			shape = append([]int64{1}, shape...)
		}
		elem := int64(1 + rng.IntN(3))
		nat, _ := strided.Dense(0, shape, elem)
		target := randTarget(rng, nat)
		size := nat.Elem * shape[len(shape)-1] * shape[len(shape)-2]
		v := strided.Layout{Offset: rng.Int64N(size/elem) * elem, Elem: elem}
		for range 1 + rng.IntN(2) {
			v.Shape = append(v.Shape, 1+rng.Int64N(3))
			v.Strides = append(v.Strides, (rng.Int64N(7)-2)*elem)
		}
		if v.Validate(size) != nil {
			continue
		}
		v2, ok := relayout(v, nat, target)
		if !ok {
			rejected++
			continue
		}
		accepted++
		checkRelayout(t, v, nat, target, v2)
	}
	if accepted < 100 || rejected < 100 {
		t.Fatalf("degenerate test: %d accepted, %d rejected", accepted, rejected)
	}
}

func TestRelayoutRejects(t *testing.T) {
	nat, _ := strided.Dense(0, []int64{4, 6}, 4)
	target := strided.Layout{Offset: 0, Shape: []int64{4, 6}, Strides: []int64{48, 4}, Elem: 4}
	cases := map[string]strided.Layout{
		"flatten carries rows":  {Offset: 0, Shape: []int64{24}, Strides: []int64{4}, Elem: 4},
		"other element size":    {Offset: 0, Shape: []int64{4, 6}, Strides: []int64{24, 4}, Elem: 2},
		"offset inside element": {Offset: 2, Shape: []int64{3}, Strides: []int64{4}, Elem: 4},
		"row walk off the end":  {Offset: 16, Shape: []int64{3}, Strides: []int64{4}, Elem: 4},
		"negative walk":         {Offset: 0, Shape: []int64{2}, Strides: []int64{-4}, Elem: 4},
	}
	for name, v := range cases {
		if _, ok := relayout(v, nat, target); ok {
			t.Errorf("%s: relayout accepted %v", name, v)
		}
	}
	whole, ok := relayout(nat, nat, target)
	if !ok || !sameElements(whole, target) {
		t.Errorf("whole buffer: %v %v", whole, ok)
	}
}

func TestSameElements(t *testing.T) {
	dense, _ := strided.Dense(8, []int64{1, 4, 6}, 4)
	flat := strided.Layout{Offset: 8, Shape: []int64{24}, Strides: []int64{4}, Elem: 4}
	if !sameElements(dense, flat) {
		t.Error("a dense layout and its flattening differ")
	}
	tr, _ := dense.Transpose(1, 2)
	if sameElements(dense, tr) {
		t.Error("a transpose has the same element map")
	}
	empty := strided.Layout{Shape: []int64{0}, Strides: []int64{4}, Elem: 4}
	if !sameElements(empty, empty) || sameElements(empty, flat) {
		t.Error("empty layouts")
	}
}
