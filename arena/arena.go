package arena

import (
	"fmt"
	"math/bits"
)

// Arena manages the free space of the region [0, Capacity()): which
// granule-aligned ranges are free to allocate. It does not know what the
// allocated bytes hold or who uses them. An Arena is not safe for
// concurrent use; callers serialize access.
type Arena struct {
	freeIndex // where the free regions are
	geometry  // the granule and the largest request, fixed by New
	occupancy // how much is allocated, kept by Alloc, Free and growth
	setup     // what New was told, kept across Reset
}

// freeIndex finds free regions by size and by address. Every free region
// is one live node, in exactly one class list (by size) and one bucket
// chain (by its last granule); allocated bytes have no node.
type freeIndex struct {
	nodes   []node   // class heads, then node slots; addressed by uint32 handles
	classes classSet // the non-empty classes
	tails   tailBits // bit w: bucket w's chain is non-empty
	chains  []uint32 // per bucket: chain of the nodes whose last granule is in it
	retired uint32   // head of the retired-slot list, or none
	nheads  uint32   // class heads: slots [0, nheads)
	fresh   uint32   // first slot never used
}

// geometry is the granule in its three forms; set once by New.
type geometry struct {
	shift   uint  // log2(granule)
	gmask   int64 // granule - 1
	maxSize int64 // largest size Alloc accepts: maxGranules granules
}

// occupancy is the arena's accounting, in granules: what Stats reports
// without walking the index.
type occupancy struct {
	capG   int64 // capacity in granules
	capB   int64 // capacity in bytes: capG << shift
	inUseG int64 // allocated granules; free granules = capG - inUseG
	peakG  int64 // max inUseG since init
	highG  int64 // max allocated end since init, in granules
	nfree  int   // live nodes: the number of free regions

	// The largest free region, kept so that Stats costs O(1): no free
	// region is larger than maxG granules, and maxN regions are exactly
	// maxG long. maxN == 0 means the largest is smaller than maxG and
	// unknown until largestFreeG walks the highest class again. Alloc and
	// Free keep it with one comparison each (see shrunk and grown).
	maxG int64
	maxN int
	// walked counts the regions largestFreeG has visited (for tests: Stats
	// must not walk while the largest is known).
	walked int64
}

// setup is the configuration New resolved; Reset keeps it.
type setup struct {
	fit       Fit   // resolved: FitFast or FitLean
	sorted    bool  // fit == FitLean: class lists kept roughly in address order
	unbounded bool  // grow at the top instead of failing
	initCap   int64 // capacity in granules given to New; Reset returns to it
	backing   []byte
}

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

// maxGranule bounds the granule so that maxGranules granules fit in an int64.
const maxGranule = 1 << 30

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
	case g < 0 || g&(g-1) != 0 || g > maxGranule:
		return nil, fmt.Errorf("arena: granule %d is not a power of two up to %d: %w", cfg.Granule, maxGranule, ErrInvalidConfig)
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
		geometry: geometry{
			shift:   uint(bits.TrailingZeros64(uint64(g))),
			gmask:   g - 1,
			maxSize: maxGranules * g,
		},
		setup: setup{
			fit:       cfg.Fit.resolve(),
			unbounded: cfg.Unbounded,
			initCap:   cfg.Capacity / g,
		},
	}
	a.sorted = a.fit == FitLean
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

// Stats returns a snapshot of the arena's occupancy. It costs O(1) and
// allocates nothing, except that the first call after the last region of
// the largest size stopped being free (taken or split by an allocation)
// walks the highest size class once to find the new largest.
func (a *Arena) Stats() Stats {
	s := Stats{
		Capacity:    a.capG << a.shift,
		InUse:       a.inUseG << a.shift,
		FreeRegions: a.nfree,
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

// AppendFreeRegions appends the free regions to dst in address order and
// returns the extended slice. It walks the non-empty tail buckets and
// allocates only to grow dst.
func (a *Arena) AppendFreeRegions(dst []Block) []Block {
	var bucket [1 << bucketShift]uint32
	for w := a.tails.next(0); w >= 0; w = a.tails.next(w + 1) {
		// Sort the bucket's chain (at most 64 regions) by address.
		k := 0
		for h := a.chains[w]; h != none && k < len(bucket); h = a.node(h).chain {
			i := k
			for ; i > 0 && a.node(bucket[i-1]).lo > a.node(h).lo; i-- {
				bucket[i] = bucket[i-1]
			}
			bucket[i] = h
			k++
		}
		for _, h := range bucket[:k] {
			n := a.node(h)
			dst = append(dst, Block{Offset: n.lo << a.shift, Size: (n.hi - n.lo) << a.shift})
		}
	}
	return dst
}

// IsAllocated reports whether every byte of [off, off+size) is allocated.
// It is false for an empty, negative or out-of-range request.
func (a *Arena) IsAllocated(off, size int64) bool {
	if size <= 0 || off < 0 || off > a.Capacity()-size {
		return false
	}
	lo := off >> a.shift
	hi := (off + size + a.gmask) >> a.shift
	h := a.after(lo)
	return h == none || a.node(h).lo >= hi
}

// FreeRegionAt returns the free region that holds byte off, and false when
// off is allocated or outside the arena. Free regions are maximal: the
// region runs from the allocated byte (or the arena's start) below off to
// the allocated byte (or the capacity) above it.
func (a *Arena) FreeRegionAt(off int64) (Block, bool) {
	if off < 0 || off >= a.Capacity() {
		return Block{}, false
	}
	g := off >> a.shift
	h := a.after(g)
	if h == none || a.node(h).lo > g {
		return Block{}, false
	}
	n := a.node(h)
	return Block{Offset: n.lo << a.shift, Size: (n.hi - n.lo) << a.shift}, true
}

// largestFreeG returns the size of the largest free region in granules.
// It is maxG while some region has that size; otherwise it finds the
// largest in the highest non-empty class, and how many regions have that
// size, and keeps both.
func (a *Arena) largestFreeG() int64 {
	if a.maxN > 0 {
		return a.maxG
	}
	c := a.classes.last()
	if c < 0 {
		a.maxG = 0
		return 0
	}
	var m int64
	n := 0
	head := headOf(c)
	for h := a.node(head).next; h != head; h = a.node(h).next {
		a.walked++
		switch s := a.node(h).hi - a.node(h).lo; {
		case s > m:
			m, n = s, 1
		case s == m:
			n++
		}
	}
	a.maxG, a.maxN = m, n
	return m
}

// shrunk notes that a free region of s granules shrank or stopped being
// free. A region that grows (Free) needs no call: it is larger than every
// region it absorbed.
func (a *Arena) shrunk(s int64) {
	if s == a.maxG {
		a.maxN--
	}
}

// grown notes a free region of s granules that is new or grew.
func (a *Arena) grown(s int64) {
	if s >= a.maxG {
		if s > a.maxG {
			a.maxG, a.maxN = s, 0
		}
		a.maxN++
	}
}
