package plan

import (
	"testing"
	"time"

	"github.com/subarena/subarena/internal/testutil"
)

// cpuTime returns the process's user plus system CPU time (0 where it is
// not measured).
func cpuTime() time.Duration { return testutil.ProcessCPU() }

// reportCPU adds "cpu-ns/op" to a benchmark that started at cpu0: on a
// shared machine, CPU time per op is steadier than wall time.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	if testutil.CPUMeasured {
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// measure runs body in b's loop, reporting allocations and CPU time per op (reportCPU);
// what the benchmark did before is not timed.
func measure(b *testing.B, body func()) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		body()
	}
	reportCPU(b, cpu0)
}
