//go:build !linux

package ggmltest

// ThreadCPU is 0 where the thread's CPU time is not available.
func ThreadCPU() int64 { return 0 }

// HaveThreadCPU reports whether ThreadCPU measures anything.
const HaveThreadCPU = false
