//go:build !unix

package plan

import (
	"testing"
	"time"
)

func cpuTime() time.Duration { return 0 }

func reportCPU(b *testing.B, cpu0 time.Duration) {}
