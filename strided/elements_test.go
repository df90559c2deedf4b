package strided_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/internal/testutil"
	"github.com/subarena/subarena/strided"
)

// TestSameElementsOracle compares SameElements with the element walk: the
// same element size and, in row-major order, the same address for every
// element (or no element in either).
func TestSameElementsOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	randLayout := func() strided.Layout {
		nd := rng.IntN(4)
		l := strided.Layout{Offset: int64(rng.IntN(3)) * 4, Elem: int64(1+rng.IntN(2)) * 4}
		for range nd {
			l.Shape = append(l.Shape, int64(rng.IntN(4)))
			l.Strides = append(l.Strides, int64(rng.IntN(4))*l.Elem)
		}
		return l
	}
	agree := 0
	for i := range 20000 {
		a := randLayout()
		b := randLayout()
		if i%3 == 0 { // often the same elements grouped differently
			b = a.Squeeze()
			b.Offset -= 4
		}
		baseA, baseB := int64(0), int64(rng.IntN(2))*4
		ea := testutil.LayoutAddrs(a.Offset+baseA, a.Shape, a.Strides)
		eb := testutil.LayoutAddrs(b.Offset+baseB, b.Shape, b.Strides)
		want := (len(ea) == 0 && len(eb) == 0) || (a.Elem == b.Elem && slices.Equal(ea, eb))
		if got := strided.SameElements(a, baseA, b, baseB); got != want {
			t.Fatalf("SameElements(%v at %d, %v at %d) = %v, the element walk says %v", a, baseA, b, baseB, got, want)
		}
		if want {
			agree++
		}
	}
	if agree < 1000 {
		t.Fatalf("only %d of the random pairs have the same elements: the test does not reach the true case", agree)
	}
}

func TestSameElementsNoAlloc(t *testing.T) {
	a := strided.Layout{Shape: []int64{4, 1, 8}, Strides: []int64{32, 0, 4}, Elem: 4}
	b := strided.Layout{Offset: 16, Shape: []int64{32}, Strides: []int64{4}, Elem: 4}
	if !strided.SameElements(a, 16, b, 0) {
		t.Fatal("a dense [4, 1, 8] and a dense [32] at the same address differ")
	}
	if n := testing.AllocsPerRun(100, func() { strided.SameElements(a, 16, b, 0) }); n != 0 {
		t.Fatalf("SameElements allocates %v times", n)
	}
}
