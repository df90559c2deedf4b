package bench

import (
	"fmt"

	"github.com/subarena/subarena/arena"
)

// lifoSizes are the 16 activation tensors of one Llama-3-8B-like decoder
// layer on a 256-token prefill chunk (d = 4096, 32 query and 8 KV heads,
// head dim 128, FFN 14336, bf16), in allocation order.
var lifoSizes = [16]int64{
	2048,    // positions T·8
	2097152, // attn_norm
	2097152, // q
	524288,  // k
	524288,  // v
	131072,  // rope cos/sin T·128·2·2
	32768,   // attn LSE T·32·4
	2097152, // attn out
	2097152, // o_proj
	2097152, // ffn_norm
	7340032, // gate
	7340032, // up
	7340032, // silu·up
	2097152, // down
	2097152, // residual
	1024,    // sampling scratch T·4
}

// LIFOStepBytes is what one step allocates: 64 tensors, 4 layers.
const LIFOStepBytes = 4 * 37_915_648

// LIFOPairs is the length of a full W2 run in pairs (15,625 steps).
const LIFOPairs = 1_000_000

// LIFOCapacity is the arena W2 runs in; placement at low addresses makes
// the high-water mark, not the capacity, the figure that matters.
const LIFOCapacity int64 = 1 << 30

// LIFO runs W2 "inference-LIFO": each step allocates the 64 tensors in
// order, then frees them in reverse order with about 10% of positions
// swapped with a random one.
type LIFO struct {
	alloc BlockAllocator
	rng   SplitMix64
	block [64]arena.Block
	held  [64]bool // false: the allocation of this slot failed
	order [64]int

	Fails     int    // failed allocations
	Pairs     int    // alloc+free pairs run (64 per step)
	Trace     uint64 // free order, allocator-independent
	OffHash   uint64 // every returned offset (all ones for a failure)
	HighWater int64  // max block end
}

// NewLIFO prepares W2 on a with a fresh generator seeded 42.
func NewLIFO(a BlockAllocator) *LIFO {
	return &LIFO{alloc: a, rng: NewSplitMix64(42), Trace: hashInit, OffHash: hashInit}
}

// Step runs one step: 64 pairs. It returns the first error a Free reports.
func (l *LIFO) Step() error {
	for i := range 64 {
		size := lifoSizes[i%16]
		b, err := l.alloc.Alloc(size)
		if err != nil {
			l.Fails++
			l.held[i] = false
			l.OffHash = mix(l.OffHash, failedOffset)
			continue
		}
		l.block[i] = arena.Block{Offset: b.Offset, Size: size}
		l.held[i] = true
		l.OffHash = mix(l.OffHash, uint64(b.Offset))
		l.HighWater = max(l.HighWater, b.Offset+b.Size)
	}
	for j := range 64 {
		l.order[j] = 63 - j
	}
	for j := range 64 {
		r := l.rng.Next()
		if (r&0xFFFFFFFF)%10 == 0 {
			k := (r >> 32) % 64
			l.order[j], l.order[k] = l.order[k], l.order[j]
		}
	}
	for _, i := range l.order {
		l.Trace = mix(l.Trace, uint64(i))
		if l.held[i] {
			if err := l.alloc.Free(l.block[i].Offset, l.block[i].Size); err != nil {
				return err
			}
		}
	}
	l.Pairs += 64
	return nil
}

// Run runs pairs/64 steps (a partial step is not run).
func (l *LIFO) Run(pairs int) error {
	for range pairs / 64 {
		if err := l.Step(); err != nil {
			return err
		}
	}
	return nil
}

// CheckInvariants reports an inconsistent run: a pair count that is not a
// whole number of steps, more failures than allocations, or (between
// steps, for a real allocator) a high-water mark below a held block's end.
func (l *LIFO) CheckInvariants() error {
	if l.Pairs < 0 || l.Pairs%64 != 0 || l.Fails > l.Pairs {
		return fmt.Errorf("bench: %d pairs with %d failures", l.Pairs, l.Fails)
	}
	for i, b := range l.block {
		if l.held[i] && b.End() > l.HighWater {
			return fmt.Errorf("bench: block %+v ends above the high-water mark %d", b, l.HighWater)
		}
	}
	return nil
}
