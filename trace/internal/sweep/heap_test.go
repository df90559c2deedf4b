package sweep

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHeapOrder pushes and pops random keys, interleaved, and checks every pop
// against a sorted reference.
func TestHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q := NewHeap(func(a, b int) bool { return a < b })
	var ref []int
	for range 10000 {
		if len(ref) == 0 || r.IntN(3) != 0 {
			x := r.IntN(100)
			q.Push(x)
			ref = append(ref, x)
			slices.Sort(ref)
		} else {
			if got := q.Min(); got != ref[0] {
				t.Fatalf("Min = %d, want %d", got, ref[0])
			}
			if got := q.Pop(); got != ref[0] {
				t.Fatalf("Pop = %d, want %d", got, ref[0])
			}
			ref = ref[1:]
		}
		if q.Len() != len(ref) {
			t.Fatalf("Len = %d, want %d", q.Len(), len(ref))
		}
	}
}

// TestVisitWhile checks that VisitWhile visits exactly the elements below a
// bound, each once, leaves the heap unchanged, and looks at no element whose
// parent is outside the bound.
func TestVisitWhile(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		q := NewHeap(func(a, b int) bool { return a < b })
		var ref []int
		for range r.IntN(300) {
			x := r.IntN(100)
			q.Push(x)
			ref = append(ref, x)
		}
		bound := r.IntN(110)
		looked := 0
		var got []int
		q.VisitWhile(func(x int) bool { looked++; return x < bound }, func(x int) { got = append(got, x) })
		var want []int
		for _, x := range ref {
			if x < bound {
				want = append(want, x)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: visited %v, want %v", round, got, want)
		}
		// Every visited element has at most two children looked at, plus the root.
		if looked > 2*len(got)+1 {
			t.Fatalf("round %d: looked at %d elements for %d visited", round, looked, len(got))
		}
		slices.Sort(ref)
		for i, w := range ref {
			if x := q.Pop(); x != w {
				t.Fatalf("round %d: pop %d = %d after the walk, want %d", round, i, x, w)
			}
		}
	}
}
