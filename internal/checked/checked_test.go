package checked

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestAgainstBig compares Add and Mul with exact big-integer arithmetic
// around the int64 limits and at random.
func TestAgainstBig(t *testing.T) {
	edge := []int64{0, 1, 2, 3, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 / 2, 1 << 31, 1 << 32, 3037000499, 3037000500}
	vals := append([]int64{}, edge...)
	for _, v := range edge {
		vals = append(vals, -v)
	}
	vals = append(vals, math.MinInt64)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		vals = append(vals, rng.Int64()>>rng.IntN(63), -(rng.Int64() >> rng.IntN(63)))
	}
	fits := func(z *big.Int) bool { return z.IsInt64() }
	for _, a := range vals {
		for _, b := range vals {
			want := new(big.Int).Add(big.NewInt(a), big.NewInt(b))
			if s, ok := Add(a, b); ok != fits(want) || (ok && s != want.Int64()) {
				t.Fatalf("Add(%d, %d) = %d, %v; want %v", a, b, s, ok, want)
			}
			if a < 0 || b < 0 {
				continue
			}
			want.Mul(big.NewInt(a), big.NewInt(b))
			if p, ok := Mul(a, b); ok != fits(want) || (ok && p != want.Int64()) {
				t.Fatalf("Mul(%d, %d) = %d, %v; want %v", a, b, p, ok, want)
			}
		}
	}
}

func TestProduct(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		elem  int64
		want  int64
		ok    bool
	}{
		{nil, 4, 4, true},
		{[]int64{2, 3}, 4, 24, true},
		{[]int64{0, 1 << 62}, 8, 0, true},
		{[]int64{2, -1}, 4, 0, false},
		{[]int64{1 << 32, 1 << 31}, 2, 0, false},
		{[]int64{1 << 31, 1 << 31}, 1, 1 << 62, true},
	} {
		if got, ok := Product(c.shape, c.elem); got != c.want || ok != c.ok {
			t.Errorf("Product(%v, %d) = %d, %v; want %d, %v", c.shape, c.elem, got, ok, c.want, c.ok)
		}
	}
}
