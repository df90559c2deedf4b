package bench

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/subarena/subarena/arena"
)

// BlockAllocator is the shape the arena workloads drive: allocate a block
// of at least size bytes, free a range previously allocated. *arena.Arena,
// *FirstFit and NullAllocator implement it.
type BlockAllocator interface {
	Alloc(size int64) (arena.Block, error)
	Free(off, size int64) error
}

// NullAllocator hands every request the block at offset 0 and accepts every
// free. Running a workload on it measures the harness alone.
type NullAllocator struct{}

// Alloc returns [0, size).
func (NullAllocator) Alloc(size int64) (arena.Block, error) { return arena.Block{Size: size}, nil }

// Free does nothing.
func (NullAllocator) Free(off, size int64) error { return nil }

// ChurnCapacity is the arena size W1 runs in: 2^30 B. With the 130,912 B
// mean size, 10,000 live blocks ask for 1,309,120,000 B, 122% of it, and
// 6,000 ask for 73%, as the specification states.
const ChurnCapacity int64 = 1 << 30

// ChurnSize maps one generator output r to a W1 size: the octave e =
// (low 32 bits of r) mod 12 picks [256<<e, 512<<e), and the high 32 bits
// pick a point on its 256-byte grid. Sizes are log-uniform over
// [256, 1,048,320] B with mean 130,912 B.
func ChurnSize(r uint64) int64 {
	e := (r & 0xFFFFFFFF) % 12
	lo := uint64(256) << e
	return int64(lo + 256*((r>>32)%(lo>>8)))
}

// ChurnConfig names one W1 setting.
type ChurnConfig struct {
	Name     string // "churn-6k" or "churn-10k"
	NLive    int    // phase-1 allocation attempts
	Pairs    int    // phase-2 free+alloc pairs in a full run
	Capacity int64  // arena bytes
}

// The two W1 settings of the specification.
var (
	Churn6k  = ChurnConfig{Name: "churn-6k", NLive: 6000, Pairs: 10_000_000, Capacity: ChurnCapacity}
	Churn10k = ChurnConfig{Name: "churn-10k", NLive: 10000, Pairs: 10_000_000, Capacity: ChurnCapacity}
)

// Churn runs W1 on one allocator: Fill performs phase 1, Step performs
// phase-2 pairs, Result reads the end state. Counters and hashes are
// updated as it goes.
type Churn struct {
	Config ChurnConfig
	alloc  BlockAllocator
	rng    SplitMix64
	live   []arena.Block // swap-removed on free
	filled bool

	Fail1, Fail2 int    // failed allocations in phase 1 and phase 2
	Pairs        int    // phase-2 pairs run so far
	Trace        uint64 // sizes and victim indices, allocator-independent until a failure
	OffHash      uint64 // returned offsets, all ones for a failure
	HighWater    int64  // max block end so far
}

// NewChurn prepares W1 on a, with a fresh generator seeded 42.
func NewChurn(cfg ChurnConfig, a BlockAllocator) *Churn {
	return &Churn{
		Config:  cfg,
		alloc:   a,
		rng:     NewSplitMix64(42),
		live:    make([]arena.Block, 0, cfg.NLive+1),
		Trace:   hashInit,
		OffHash: hashInit,
	}
}

// allocate tries one allocation and reports whether it succeeded.
func (c *Churn) allocate(size int64) bool {
	b, err := c.alloc.Alloc(size)
	if err != nil {
		c.OffHash = mix(c.OffHash, failedOffset)
		return false
	}
	c.OffHash = mix(c.OffHash, uint64(b.Offset))
	c.live = append(c.live, arena.Block{Offset: b.Offset, Size: size})
	c.HighWater = max(c.HighWater, b.Offset+b.Size)
	return true
}

// Fill runs phase 1: exactly NLive allocation attempts. It runs once; later
// calls do nothing.
func (c *Churn) Fill() {
	if c.filled {
		return
	}
	c.filled = true
	for range c.Config.NLive {
		size := ChurnSize(c.rng.Next())
		c.Trace = mix(c.Trace, uint64(size))
		if !c.allocate(size) {
			c.Fail1++
		}
	}
}

// Step runs n phase-2 pairs (filling first if needed): free a uniformly
// chosen live block (swap-remove), then allocate a new size. It returns the
// first error a Free reports, which only a broken allocator produces.
func (c *Churn) Step(n int) error {
	c.Fill()
	for range n {
		r1, r2 := c.rng.Next(), c.rng.Next()
		if k := len(c.live); k > 0 {
			i := int(r1 % uint64(k))
			c.Trace = mix(c.Trace, uint64(i))
			v := c.live[i]
			if err := c.alloc.Free(v.Offset, v.Size); err != nil {
				return err
			}
			c.live[i] = c.live[k-1]
			c.live = c.live[:k-1]
		}
		size := ChurnSize(r2)
		c.Trace = mix(c.Trace, uint64(size))
		if !c.allocate(size) {
			c.Fail2++
		}
		c.Pairs++
	}
	return nil
}

// ChurnResult is the end-of-run record of a W1 run.
type ChurnResult struct {
	Workload    string
	Pairs       int
	Fail1       int
	Fail2       int
	LiveEnd     int     // live blocks at the end
	TotalFree   int64   // capacity minus live bytes
	LargestFree int64   // largest gap between live blocks, edges included
	FreeRegions int     // number of non-empty gaps
	Frag        float64 // 1 - LargestFree/TotalFree
	HighWater   int64
	Trace       uint64
	OffHash     uint64
}

// Result computes the end-of-run statistics by gap analysis: live blocks
// sorted by offset, the free regions are the gaps between them including
// [0, first) and [last end, capacity). It allocates a sorted copy of the
// live set and is not meant for timed loops. With NullAllocator every block
// sits at 0 and the gap figures mean nothing.
func (c *Churn) Result() ChurnResult {
	r := ChurnResult{
		Workload: c.Config.Name, Pairs: c.Pairs, Fail1: c.Fail1, Fail2: c.Fail2,
		LiveEnd: len(c.live), HighWater: c.HighWater, Trace: c.Trace, OffHash: c.OffHash,
	}
	r.TotalFree, r.LargestFree, r.FreeRegions = gaps(c.live, c.Config.Capacity)
	if r.TotalFree > 0 {
		r.Frag = 1 - float64(r.LargestFree)/float64(r.TotalFree)
	}
	return r
}

// gaps returns the free space around blocks in [0, capacity): total bytes
// not covered (capacity minus the sum of sizes), the largest gap and the
// number of non-empty gaps, edges included. blocks are not modified.
func gaps(blocks []arena.Block, capacity int64) (total, largest int64, regions int) {
	s := slices.Clone(blocks)
	slices.SortFunc(s, func(x, y arena.Block) int { return cmp.Compare(x.Offset, y.Offset) })
	total = capacity
	at := int64(0)
	gap := func(lo, hi int64) {
		if hi > lo {
			largest = max(largest, hi-lo)
			regions++
		}
	}
	for _, b := range s {
		total -= b.Size
		gap(at, b.Offset)
		at = max(at, b.End())
	}
	gap(at, capacity)
	return total, largest, regions
}

// CheckInvariants reports the first inconsistency of the run so far: a
// live count that does not match the attempts and failures, a live block
// that is empty or outside [0, capacity), or (for any allocator but
// NullAllocator) two live blocks that overlap.
func (c *Churn) CheckInvariants() error {
	if c.filled && len(c.live) != c.Config.NLive-c.Fail1-c.Fail2 {
		return fmt.Errorf("bench: %d live blocks after %d attempts with %d+%d failures", len(c.live), c.Config.NLive, c.Fail1, c.Fail2)
	}
	if c.Pairs < 0 || c.Fail2 > c.Pairs || c.Fail1 > c.Config.NLive {
		return fmt.Errorf("bench: %d pairs, %d+%d failures", c.Pairs, c.Fail1, c.Fail2)
	}
	s := slices.Clone(c.live)
	slices.SortFunc(s, func(x, y arena.Block) int { return cmp.Compare(x.Offset, y.Offset) })
	_, null := c.alloc.(NullAllocator)
	for i, b := range s {
		if b.Size <= 0 || b.Offset < 0 || b.End() > c.Config.Capacity {
			return fmt.Errorf("bench: live block %+v outside [0, %d)", b, c.Config.Capacity)
		}
		if !null && i > 0 && s[i-1].End() > b.Offset {
			return fmt.Errorf("bench: live blocks %+v and %+v overlap", s[i-1], b)
		}
	}
	return nil
}
