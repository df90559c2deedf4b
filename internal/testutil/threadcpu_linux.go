//go:build linux

package testutil

import (
	"syscall"
	"time"
	"unsafe"
)

// ThreadCPUMeasured reports whether ThreadCPU measures anything on this
// platform.
const ThreadCPUMeasured = true

// clockThreadCPUTime is Linux's CLOCK_THREAD_CPUTIME_ID.
const clockThreadCPUTime = 3

// ThreadCPU returns the CPU time the calling OS thread has used, or 0 when
// it cannot be read. Lock the goroutine to its thread
// (runtime.LockOSThread) around what it measures: it counts the work and
// the allocation assists of that goroutine, not the collector's background
// workers or other goroutines.
func ThreadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
