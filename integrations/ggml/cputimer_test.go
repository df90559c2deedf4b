//go:build linux

package ggml_test

import (
	"runtime"
	"syscall"
	"testing"
)

// threadCPU returns the calling thread's CPU time in nanoseconds.
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// cpuTimer measures the CPU time of a benchmark loop on one locked thread:
// on a shared machine it moves far less than wall time.
type cpuTimer struct{ start int64 }

func startCPU(b *testing.B) cpuTimer {
	runtime.LockOSThread()
	return cpuTimer{threadCPU()}
}

func (c cpuTimer) report(b *testing.B) {
	d := threadCPU() - c.start
	runtime.UnlockOSThread()
	if b.N > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "cpu-ns/op")
	}
}
