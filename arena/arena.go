package arena

import (
	"fmt"
	"math/bits"
)

// DefaultGranule is the granule New uses when Config.Granule is 0: 256 bytes.
const DefaultGranule = 256

// Config describes an arena to New.
type Config struct {
	// Capacity is the arena size in bytes, a multiple of Granule. It must be
	// > 0 unless Unbounded, where it is the initial size and may be 0.
	Capacity int64
	// Granule is the unit and alignment of every block, a power of two;
	// 0 means DefaultGranule.
	Granule int64
	// Backing is optional host memory behind the offsets, len >= Capacity;
	// nil means the arena hands out offsets only. Not allowed with Unbounded.
	Backing []byte
	// Unbounded selects planning mode: when no free region fits, the arena
	// grows at the top instead of failing, and HighWater is the answer.
	Unbounded bool
	// Fit is the placement strategy; the zero value is the recommended one.
	Fit Fit
}

// Block is the half-open byte range [Offset, Offset+Size) of an arena.
type Block struct {
	Offset, Size int64
}

// End returns Offset+Size, the first byte after the block.
func (b Block) End() int64 { return b.Offset + b.Size }

// Stats is a snapshot of an arena's occupancy. All figures are bytes except
// FreeRegions.
type Stats struct {
	Capacity    int64 // current size: [0, Capacity) is managed
	InUse       int64 // bytes allocated now
	Free        int64 // Capacity - InUse
	LargestFree int64 // size of the largest free region
	FreeRegions int   // number of maximal free regions (fully coalesced)
	HighWater   int64 // highest block end ever allocated since New or Reset
	PeakInUse   int64 // highest InUse since New or Reset
	// Fragmentation is 1 - LargestFree/Free, the share of free bytes that a
	// single request could not reach; 0 when Free == 0.
	Fragmentation float64
}

// maxGranules bounds the arena size in granules, so that granule indices,
// bitmaps and growth in planning mode stay bounded: 2^32 granules is 1 TiB
// at the default granule.
const maxGranules = 1 << 32

// New returns an arena over [0, cfg.Capacity) with every byte free.
// It fails with ErrInvalidConfig for a granule that is not a power of two,
// a capacity that is negative, unaligned, zero (unless Unbounded) or too
// large, a Backing shorter than Capacity or combined with Unbounded, or an
// unknown Fit.
func New(cfg Config) (*Arena, error) {
	g := cfg.Granule
	if g == 0 {
		g = DefaultGranule
	}
	switch {
	case g < 0 || g&(g-1) != 0:
		return nil, fmt.Errorf("arena: granule %d is not a power of two: %w", cfg.Granule, ErrInvalidConfig)
	case cfg.Capacity < 0:
		return nil, fmt.Errorf("arena: capacity %d is negative: %w", cfg.Capacity, ErrInvalidConfig)
	case cfg.Capacity == 0 && !cfg.Unbounded:
		return nil, fmt.Errorf("arena: capacity 0 needs Unbounded: %w", ErrInvalidConfig)
	case cfg.Capacity&(g-1) != 0:
		return nil, fmt.Errorf("arena: capacity %d is not a multiple of granule %d: %w", cfg.Capacity, g, ErrInvalidConfig)
	case cfg.Capacity/g > maxGranules:
		return nil, fmt.Errorf("arena: capacity %d exceeds %d granules: %w", cfg.Capacity, int64(maxGranules), ErrInvalidConfig)
	case cfg.Backing != nil && cfg.Unbounded:
		return nil, fmt.Errorf("arena: backing memory cannot grow in unbounded mode: %w", ErrInvalidConfig)
	case cfg.Backing != nil && int64(len(cfg.Backing)) < cfg.Capacity:
		return nil, fmt.Errorf("arena: backing of %d B is shorter than capacity %d: %w", len(cfg.Backing), cfg.Capacity, ErrInvalidConfig)
	case !cfg.Fit.valid():
		return nil, fmt.Errorf("arena: unknown fit %v: %w", cfg.Fit, ErrInvalidConfig)
	}
	a := &Arena{
		shift:     uint(bits.TrailingZeros64(uint64(g))),
		fit:       cfg.Fit.resolve(),
		unbounded: cfg.Unbounded,
		initCap:   cfg.Capacity / g,
	}
	if cfg.Backing != nil {
		a.backing = cfg.Backing[:cfg.Capacity:cfg.Capacity]
	}
	a.init()
	return a, nil
}

// Granule returns the arena's granule in bytes.
func (a *Arena) Granule() int64 { return 1 << a.shift }

// Capacity returns the current arena size in bytes. In unbounded mode it
// grows as allocations require.
func (a *Arena) Capacity() int64 { return a.capG << a.shift }

// Fit returns the placement strategy in use (never FitDefault).
func (a *Arena) Fit() Fit { return a.fit }

// Unbounded reports whether the arena grows instead of failing.
func (a *Arena) Unbounded() bool { return a.unbounded }

// Bytes returns the backing memory of b, capped so that appending cannot
// reach past b.End(). It returns nil when the arena has no backing or b is
// not inside [0, Capacity).
func (a *Arena) Bytes(b Block) []byte {
	if a.backing == nil || b.Offset < 0 || b.Size < 0 || b.Offset > int64(len(a.backing))-b.Size {
		return nil
	}
	return a.backing[b.Offset : b.Offset+b.Size : b.Offset+b.Size]
}

// Stats returns a snapshot of the arena's occupancy. It walks the largest
// size class, so it costs more than Alloc; it allocates nothing.
func (a *Arena) Stats() Stats {
	s := Stats{
		Capacity:    a.capG << a.shift,
		InUse:       a.inUseG << a.shift,
		FreeRegions: a.freeRegions(),
		HighWater:   a.highG << a.shift,
		PeakInUse:   a.peakG << a.shift,
		LargestFree: a.largestFreeG() << a.shift,
	}
	s.Free = s.Capacity - s.InUse
	if s.Free > 0 {
		s.Fragmentation = 1 - float64(s.LargestFree)/float64(s.Free)
	}
	return s
}

// Reset frees every byte and clears HighWater and PeakInUse. An unbounded
// arena returns to the capacity it was created with.
func (a *Arena) Reset() { a.init() }

// noSpace builds the error for a request of reqG granules.
func (a *Arena) noSpace(reqG int64) error {
	return &NoSpaceError{
		Requested:   reqG << a.shift,
		TotalFree:   (a.capG - a.inUseG) << a.shift,
		LargestFree: a.largestFreeG() << a.shift,
	}
}

// AppendFreeRegions appends the free regions to dst in address order and
// returns the extended slice.
func (a *Arena) AppendFreeRegions(dst []Block) []Block {
	a.eachFree(func(lo, hi int64) {
		dst = append(dst, Block{Offset: lo << a.shift, Size: (hi - lo) << a.shift})
	})
	return dst
}

// IsAllocated reports whether every byte of [off, off+size) is allocated.
// It is false for an empty, negative or out-of-range request.
func (a *Arena) IsAllocated(off, size int64) bool {
	if size <= 0 || off < 0 || off > a.Capacity()-size {
		return false
	}
	lo := off >> a.shift
	hi := (off + size + (1 << a.shift) - 1) >> a.shift
	return a.allocated(lo, hi)
}

// Alloc returns a free block of at least size bytes (size rounded up to the
// granule), now allocated. It fails with ErrInvalidSize for size <= 0 or a
// size that overflows, and with a *NoSpaceError (ErrNoSpace) when a bounded
// arena has no free region large enough.
func (a *Arena) Alloc(size int64) (Block, error) {
	if size <= 0 || size > maxGranules<<a.shift {
		return Block{}, fmt.Errorf("arena: alloc %d B: %w", size, ErrInvalidSize)
	}
	n := (size + (1 << a.shift) - 1) >> a.shift
	lo, ok := a.alloc(n)
	if !ok {
		if !a.unbounded {
			return Block{}, fmt.Errorf("arena: alloc %d B: %w", size, a.noSpace(n))
		}
		if lo, ok = a.grow(n); !ok {
			return Block{}, fmt.Errorf("arena: alloc %d B beyond %d granules: %w", size, int64(maxGranules), ErrInvalidSize)
		}
	}
	a.inUseG += n
	a.peakG = max(a.peakG, a.inUseG)
	a.highG = max(a.highG, lo+n)
	return Block{Offset: lo << a.shift, Size: n << a.shift}, nil
}

// Free returns [off, off+size) to the free space, coalescing it with free
// neighbours. The range may be any granule-aligned part of allocated space:
// a whole block, a piece of one, or a span across adjacent blocks. It fails
// with ErrInvalidSize for size <= 0, ErrMisaligned for an unaligned offset or
// size, ErrOutOfRange for a range outside [0, Capacity), and ErrNotAllocated
// when any byte of the range is already free.
func (a *Arena) Free(off, size int64) error {
	gm := int64(1)<<a.shift - 1
	switch {
	case size <= 0:
		return fmt.Errorf("arena: free [%d, +%d): %w", off, size, ErrInvalidSize)
	case off&gm != 0 || size&gm != 0:
		return fmt.Errorf("arena: free [%d, +%d) with granule %d: %w", off, size, gm+1, ErrMisaligned)
	case off < 0 || off > a.Capacity()-size:
		return fmt.Errorf("arena: free [%d, +%d) beyond capacity %d: %w", off, size, a.Capacity(), ErrOutOfRange)
	}
	lo, n := off>>a.shift, size>>a.shift
	if !a.free(lo, lo+n) {
		return fmt.Errorf("arena: free [%d, %d): %w", off, off+size, ErrNotAllocated)
	}
	a.inUseG -= n
	return nil
}
