//go:build !unix

package cputime

import "time"

// Measured reports whether Process measures anything on this platform.
const Measured = false

// Process returns 0: CPU time is not measured on this platform.
func Process() time.Duration { return 0 }
