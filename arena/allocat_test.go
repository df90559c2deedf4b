package arena

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestAllocAtAgainstModel mixes Alloc, Free and AllocAt against a granule
// bitmap, checking invariants after every step.
func TestAllocAtAgainstModel(t *testing.T) {
	for _, fit := range []Fit{FitFast, FitLean} {
		const g, n = 64, 256 // granules
		a, err := New(Config{Capacity: g * n, Granule: g, Fit: fit})
		if err != nil {
			t.Fatal(err)
		}
		used := make([]bool, n)
		r := rand.New(rand.NewPCG(5, uint64(fit)))
		for step := 0; step < 5000; step++ {
			lo := r.IntN(n)
			k := 1 + r.IntN(min(16, n-lo))
			free, busy := true, true
			for i := lo; i < lo+k; i++ {
				free = free && !used[i]
				busy = busy && used[i]
			}
			switch op := r.IntN(3); {
			case op == 0:
				err := a.AllocAt(int64(lo*g), int64(k*g))
				if free != (err == nil) {
					t.Fatalf("step %d: AllocAt [%d,+%d) free=%v err=%v", step, lo, k, free, err)
				}
				if err == nil {
					for i := lo; i < lo+k; i++ {
						used[i] = true
					}
				} else if !errors.Is(err, ErrNotFree) {
					t.Fatalf("step %d: %v", step, err)
				}
			case op == 1 && busy:
				if err := a.Free(int64(lo*g), int64(k*g)); err != nil {
					t.Fatal(err)
				}
				for i := lo; i < lo+k; i++ {
					used[i] = false
				}
			default:
				b, err := a.Alloc(int64(k * g))
				if err != nil {
					continue
				}
				for i := b.Offset / g; i < b.End()/g; i++ {
					if used[i] {
						t.Fatalf("step %d: Alloc returned used granule %d", step, i)
					}
					used[i] = true
				}
			}
			if err := a.CheckInvariants(); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			var inUse int64
			for i, u := range used {
				if u != a.IsAllocated(int64(i*g), g) {
					t.Fatalf("step %d: granule %d used=%v", step, i, u)
				}
				if u {
					inUse += g
				}
			}
			if st := a.Stats(); st.InUse != inUse {
				t.Fatalf("step %d: in use %d, model %d", step, st.InUse, inUse)
			}
		}
	}
	a, _ := New(Config{Capacity: 1024, Granule: 64})
	for _, c := range []struct {
		off, size int64
		want      error
	}{{0, 0, ErrInvalidSize}, {32, 64, ErrMisaligned}, {1024, 64, ErrOutOfRange}, {-64, 64, ErrOutOfRange}} {
		if err := a.AllocAt(c.off, c.size); !errors.Is(err, c.want) {
			t.Fatalf("AllocAt(%d, %d) = %v, want %v", c.off, c.size, err, c.want)
		}
	}
}
