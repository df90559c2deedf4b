//go:build linux

package ggmltest

import "syscall"

// ThreadCPU returns the calling thread's CPU time in nanoseconds (lock the
// goroutine to its thread around a measurement).
func ThreadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// HaveThreadCPU reports whether ThreadCPU measures anything.
const HaveThreadCPU = true
