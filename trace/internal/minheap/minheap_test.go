package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOrder pushes and pops random keys, interleaved, and checks every pop
// against a sorted reference.
func TestOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	q := New(func(a, b int) bool { return a < b })
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
