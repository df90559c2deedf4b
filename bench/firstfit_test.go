package bench

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/subarena/subarena/arena"
)

// TestFirstFitAgainstModel drives FirstFit with random allocations and
// random range frees and compares it with a bitmap of granules after every
// step: the lowest fitting offset, the same free regions, errors exactly
// where a byte of the range is free.
func TestFirstFitAgainstModel(t *testing.T) {
	const g, n = 256, 200
	f, err := NewFirstFit(n*g, g)
	if err != nil {
		t.Fatal(err)
	}
	used := make([]bool, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for step := 0; step < 20000; step++ {
		if rng.IntN(2) == 0 {
			k := 1 + rng.IntN(12)
			want := -1
			for lo := 0; lo+k <= n && want < 0; lo++ {
				if !slices.Contains(used[lo:lo+k], true) {
					want = lo
				}
			}
			b, err := f.Alloc(int64(k*g - rng.IntN(g)))
			switch {
			case want < 0:
				if !errors.Is(err, arena.ErrNoSpace) {
					t.Fatalf("step %d: alloc %d granules: %v with no fit", step, k, err)
				}
			case err != nil || b.Offset != int64(want*g) || b.Size != int64(k*g):
				t.Fatalf("step %d: alloc %d granules = %+v, %v; want offset %d", step, k, b, err, want*g)
			default:
				for i := want; i < want+k; i++ {
					used[i] = true
				}
			}
		} else {
			lo := rng.IntN(n)
			hi := lo + 1 + rng.IntN(min(n-lo, 8))
			err := f.Free(int64(lo*g), int64((hi-lo)*g))
			if slices.Contains(used[lo:hi], false) {
				if !errors.Is(err, arena.ErrNotAllocated) {
					t.Fatalf("step %d: free [%d, %d) over free space: %v", step, lo, hi, err)
				}
			} else {
				if err != nil {
					t.Fatalf("step %d: free [%d, %d): %v", step, lo, hi, err)
				}
				for i := lo; i < hi; i++ {
					used[i] = false
				}
			}
		}
		if err := f.CheckInvariants(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		var want []arena.Block
		for i := 0; i < n; {
			if used[i] {
				i++
				continue
			}
			j := i
			for j < n && !used[j] {
				j++
			}
			want = append(want, arena.Block{Offset: int64(i * g), Size: int64((j - i) * g)})
			i = j
		}
		if got := f.AppendFreeRegions(nil); !slices.Equal(got, want) {
			t.Fatalf("step %d: regions %v, model %v", step, got, want)
		}
	}
}

func TestFirstFitBadInput(t *testing.T) {
	if _, err := NewFirstFit(1000, 256); !errors.Is(err, arena.ErrInvalidConfig) {
		t.Fatal(err)
	}
	f, _ := NewFirstFit(4096, 256)
	for _, c := range []struct {
		off, size int64
		want      error
	}{
		{0, 0, arena.ErrInvalidSize},
		{1, 256, arena.ErrMisaligned},
		{-256, 256, arena.ErrOutOfRange},
		{4096, 256, arena.ErrOutOfRange},
		{0, 256, arena.ErrNotAllocated},
	} {
		if err := f.Free(c.off, c.size); !errors.Is(err, c.want) {
			t.Fatalf("Free(%d, %d) = %v, want %v", c.off, c.size, err, c.want)
		}
	}
	if _, err := f.Alloc(0); !errors.Is(err, arena.ErrInvalidSize) {
		t.Fatal(err)
	}
	if _, err := f.Alloc(8192); !errors.Is(err, arena.ErrNoSpace) {
		t.Fatal(err)
	}
}
