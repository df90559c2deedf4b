package bench

import "testing"

var benchAllocators = []string{"subarena", "subarena-fast", "firstfit", "null"}

// benchChurn times b.N phase-2 pairs of W1 after an untimed phase 1, and
// reports the end state: fragmentation by gap analysis, failures, live
// blocks. The null allocator measures the harness alone.
func benchChurn(b *testing.B, cfg ChurnConfig) {
	for _, name := range benchAllocators {
		b.Run(name, func(b *testing.B) {
			c := NewChurn(cfg, newAllocator(b, name, cfg.Capacity))
			c.Fill()
			b.ReportAllocs()
			b.ResetTimer()
			if err := c.Step(b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			r := c.Result()
			if name != "null" {
				b.ReportMetric(r.Frag, "frag")
			}
			b.ReportMetric(float64(r.Fail1), "fail1")
			b.ReportMetric(float64(r.Fail2), "fail2")
			b.ReportMetric(float64(r.LiveEnd), "live")
		})
	}
}

func BenchmarkChurn6k(b *testing.B)  { benchChurn(b, Churn6k) }
func BenchmarkChurn10k(b *testing.B) { benchChurn(b, Churn10k) }

// BenchmarkLIFO times W2; one op is one alloc+free pair, run in whole
// steps of 64.
func BenchmarkLIFO(b *testing.B) {
	for _, name := range benchAllocators {
		b.Run(name, func(b *testing.B) {
			l := NewLIFO(newAllocator(b, name, LIFOCapacity))
			b.ReportAllocs()
			b.ResetTimer()
			for l.Pairs < b.N {
				if err := l.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if name != "null" {
				b.ReportMetric(float64(l.HighWater), "hwm")
			}
			b.ReportMetric(float64(l.Fails), "fails")
		})
	}
}
