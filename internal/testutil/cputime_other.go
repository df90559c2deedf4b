//go:build !unix

package testutil

import "time"

// CPUMeasured reports whether ProcessCPU measures anything on this platform.
const CPUMeasured = false

// ProcessCPU returns 0: CPU time is not measured on this platform.
func ProcessCPU() time.Duration { return 0 }
