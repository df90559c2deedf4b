package testutil

import "testing"

// TestProcessCPU: the CPU time measured grows with work done, where measured.
func TestProcessCPU(t *testing.T) {
	if !CPUMeasured {
		t.Skip("CPU time is not measured on this platform")
	}
	t0 := ProcessCPU()
	x := 0
	for i := range 200_000_000 {
		x ^= i * i
	}
	if t1 := ProcessCPU(); t1 <= t0 {
		t.Errorf("CPU time did not grow (%v, then %v; %d)", t0, t1, x)
	}
}
