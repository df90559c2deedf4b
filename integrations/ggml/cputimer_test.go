package ggml_test

import (
	"runtime"
	"testing"

	"github.com/subarena/subarena/integrations/ggml/internal/ggmltest"
)

// cpuTimer measures the CPU time of a benchmark loop on one locked thread:
// on a shared machine it moves far less than wall time.
type cpuTimer struct{ start int64 }

func startCPU(b *testing.B) cpuTimer {
	runtime.LockOSThread()
	return cpuTimer{ggmltest.ThreadCPU()}
}

func (c cpuTimer) report(b *testing.B) {
	d := ggmltest.ThreadCPU() - c.start
	runtime.UnlockOSThread()
	if b.N > 0 && ggmltest.HaveThreadCPU {
		b.ReportMetric(float64(d)/float64(b.N), "cpu-ns/op")
	}
}
