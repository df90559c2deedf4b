package arena

import "testing"

// benchChurn keeps live blocks in the arena and, per op, frees one chosen
// at random and allocates a new one of a random size: the steady state of
// an allocator under churn. One op is one Free plus one Alloc.
func benchChurn(b *testing.B, fit Fit, live int, maxGranules int64) {
	a := mustNew(b, Config{Capacity: 1 << 30, Fit: fit})
	x := uint64(42)
	rnd := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	blocks := make([]Block, 0, live)
	for len(blocks) < live {
		blk, err := a.Alloc(int64(1+rnd()%uint64(maxGranules)) * DefaultGranule)
		if err != nil {
			b.Fatal(err)
		}
		blocks = append(blocks, blk)
	}
	// Check the answer once before timing.
	if err := a.CheckInvariants(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		i := rnd() % uint64(len(blocks))
		if err := a.Free(blocks[i].Offset, blocks[i].Size); err != nil {
			b.Fatal(err)
		}
		blk, err := a.Alloc(int64(1+rnd()%uint64(maxGranules)) * DefaultGranule)
		if err != nil {
			b.Fatal(err)
		}
		blocks[i] = blk
	}
	b.StopTimer()
	b.ReportMetric(a.Stats().Fragmentation, "frag")
}

func BenchmarkAllocFree(b *testing.B) {
	for _, fit := range []Fit{FitLean, FitFast} {
		b.Run(fit.String(), func(b *testing.B) { benchChurn(b, fit, 4000, 1024) })
	}
}

// BenchmarkAllocFreeLIFO allocates 64 blocks and frees them in reverse
// order: one op is one Alloc plus one Free.
func BenchmarkAllocFreeLIFO(b *testing.B) {
	for _, fit := range []Fit{FitLean, FitFast} {
		b.Run(fit.String(), func(b *testing.B) {
			a := mustNew(b, Config{Capacity: 1 << 30, Fit: fit})
			var blocks [64]Block
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += 64 {
				for j := range blocks {
					blocks[j], _ = a.Alloc(int64(j%16+1) << 16)
				}
				for j := len(blocks) - 1; j >= 0; j-- {
					if err := a.Free(blocks[j].Offset, blocks[j].Size); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if s := a.Stats(); s.FreeRegions != 1 || s.HighWater != 64/16*(16*17/2)<<16 {
				b.Fatalf("stats %+v", s)
			}
		})
	}
}

// BenchmarkFreePieces allocates a block and frees it in four pieces in a
// scattered order: one op is one Alloc plus four Frees.
func BenchmarkFreePieces(b *testing.B) {
	a := mustNew(b, Config{Capacity: 1 << 24})
	const piece = 16 * DefaultGranule
	b.ReportAllocs()
	for range b.N {
		blk, err := a.Alloc(4 * piece)
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range [4]int64{1, 3, 0, 2} {
			if err := a.Free(blk.Offset+k*piece, piece); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkIsAllocated measures the address query Free starts with.
func BenchmarkIsAllocated(b *testing.B) {
	a := mustNew(b, Config{Capacity: 1 << 30})
	blk, _ := a.Alloc(1 << 20)
	b.ReportAllocs()
	for i := range b.N {
		if !a.IsAllocated(blk.Offset+int64(i%4096)*256, 256) {
			b.Fatal("not allocated")
		}
	}
}
