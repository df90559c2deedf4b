//go:build !linux

package testutil

import "time"

// ThreadCPUMeasured reports whether ThreadCPU measures anything on this
// platform: not on this one.
const ThreadCPUMeasured = false

// ThreadCPU returns 0: the calling thread's CPU time is read on Linux only.
func ThreadCPU() time.Duration { return 0 }
