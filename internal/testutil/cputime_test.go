package testutil

import (
	"runtime"
	"testing"
	"time"
)

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

// TestThreadCPU: the calling thread's CPU time grows with its own work, and
// not while it sleeps, where measured.
func TestThreadCPU(t *testing.T) {
	if !ThreadCPUMeasured {
		t.Skip("thread CPU time is not measured on this platform")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := ThreadCPU()
	x := 0
	for i := range 200_000_000 {
		x ^= i * i
	}
	t1 := ThreadCPU()
	if t1 <= t0 {
		t.Errorf("thread CPU time did not grow (%v, then %v; %d)", t0, t1, x)
	}
	time.Sleep(50 * time.Millisecond)
	if t2 := ThreadCPU(); t2-t1 > 25*time.Millisecond {
		t.Errorf("thread CPU time grew by %v over a 50 ms sleep", t2-t1)
	}
}
