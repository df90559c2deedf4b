package bench

import (
	"fmt"
	"sort"

	"github.com/subarena/subarena/arena"
)

// FirstFit is the baseline allocator: an address-ordered list of free
// regions, searched from the lowest address for the first that fits, the
// request carved from its low end, and freed ranges coalesced with their
// neighbours. This is the placement ggml's graph allocator uses. Alloc is
// O(free regions) and Free is O(log regions) to find the place plus
// O(regions) to insert or delete it in the sorted slice.
//
// Like arena.Arena it accepts a free of any granule-aligned part of
// allocated space and reports errors with the arena package's sentinels.
type FirstFit struct {
	granule  int64
	capacity int64
	free     []arena.Block // sorted by Offset, disjoint, never touching
}

// NewFirstFit returns an empty FirstFit over [0, capacity) with the given
// granule (a power of two; capacity a multiple of it).
func NewFirstFit(capacity, granule int64) (*FirstFit, error) {
	if granule <= 0 || granule&(granule-1) != 0 || capacity <= 0 || capacity%granule != 0 {
		return nil, fmt.Errorf("bench: first-fit capacity %d, granule %d: %w", capacity, granule, arena.ErrInvalidConfig)
	}
	return &FirstFit{granule: granule, capacity: capacity, free: []arena.Block{{Size: capacity}}}, nil
}

// Alloc returns the lowest free block of size bytes rounded up to the
// granule.
func (f *FirstFit) Alloc(size int64) (arena.Block, error) {
	if size <= 0 || size > f.capacity {
		if size <= 0 {
			return arena.Block{}, fmt.Errorf("bench: first-fit alloc %d B: %w", size, arena.ErrInvalidSize)
		}
		return arena.Block{}, fmt.Errorf("bench: first-fit alloc %d B: %w", size, arena.ErrNoSpace)
	}
	n := (size + f.granule - 1) &^ (f.granule - 1)
	for i := range f.free {
		r := &f.free[i]
		if r.Size < n {
			continue
		}
		b := arena.Block{Offset: r.Offset, Size: n}
		if r.Size == n {
			f.free = append(f.free[:i], f.free[i+1:]...)
		} else {
			r.Offset += n
			r.Size -= n
		}
		return b, nil
	}
	return arena.Block{}, fmt.Errorf("bench: first-fit alloc %d B: %w", size, arena.ErrNoSpace)
}

// Free returns [off, off+size) to the free list.
func (f *FirstFit) Free(off, size int64) error {
	switch {
	case size <= 0:
		return fmt.Errorf("bench: first-fit free [%d, +%d): %w", off, size, arena.ErrInvalidSize)
	case off%f.granule != 0 || size%f.granule != 0:
		return fmt.Errorf("bench: first-fit free [%d, +%d): %w", off, size, arena.ErrMisaligned)
	case off < 0 || off > f.capacity-size:
		return fmt.Errorf("bench: first-fit free [%d, +%d): %w", off, size, arena.ErrOutOfRange)
	}
	end := off + size
	// i: the first free region starting at or after end.
	i := sort.Search(len(f.free), func(i int) bool { return f.free[i].Offset >= end })
	if i > 0 && f.free[i-1].End() > off {
		return fmt.Errorf("bench: first-fit free [%d, %d): %w", off, end, arena.ErrNotAllocated)
	}
	left := i > 0 && f.free[i-1].End() == off
	right := i < len(f.free) && f.free[i].Offset == end
	switch {
	case left && right:
		f.free[i-1].Size += size + f.free[i].Size
		f.free = append(f.free[:i], f.free[i+1:]...)
	case left:
		f.free[i-1].Size += size
	case right:
		f.free[i].Offset = off
		f.free[i].Size += size
	default:
		f.free = append(f.free, arena.Block{})
		copy(f.free[i+1:], f.free[i:])
		f.free[i] = arena.Block{Offset: off, Size: size}
	}
	return nil
}

// AppendFreeRegions appends the free regions in address order to dst.
func (f *FirstFit) AppendFreeRegions(dst []arena.Block) []arena.Block {
	return append(dst, f.free...)
}

// CheckInvariants reports the first violated invariant of the free list:
// regions non-empty, granule-aligned, inside [0, capacity), sorted,
// disjoint and never touching (fully coalesced).
func (f *FirstFit) CheckInvariants() error {
	prevEnd := int64(-1)
	for i, r := range f.free {
		switch {
		case r.Size <= 0 || r.Offset < 0 || r.End() > f.capacity:
			return fmt.Errorf("bench: first-fit region %d %+v empty or outside [0, %d)", i, r, f.capacity)
		case r.Offset%f.granule != 0 || r.Size%f.granule != 0:
			return fmt.Errorf("bench: first-fit region %d %+v misaligned", i, r)
		case r.Offset <= prevEnd:
			return fmt.Errorf("bench: first-fit region %d %+v overlaps or touches the one ending at %d", i, r, prevEnd)
		}
		prevEnd = r.End()
	}
	return nil
}
