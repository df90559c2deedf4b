//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// CPUMeasured reports whether ProcessCPU measures anything on this platform.
const CPUMeasured = true

// ProcessCPU returns the CPU time (user + system) the process has used, or 0
// when it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
