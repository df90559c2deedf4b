package arena

import (
	"errors"
	"fmt"

	sasync "github.com/subarena/subarena/sync"
)

// Sentinel errors. Every error returned by this package matches exactly one
// of them under errors.Is, and every failed call leaves the arena unchanged.
var (
	// ErrNoSpace: no free region can hold the request (bounded arenas only).
	// The concrete error is a *NoSpaceError carrying the figures.
	ErrNoSpace = errors.New("arena: no space")
	// ErrInvalidSize: a size that is zero, negative, or overflows when
	// rounded up to the granule or added to an offset.
	ErrInvalidSize = errors.New("arena: invalid size")
	// ErrMisaligned: an offset or size that is not a multiple of the granule.
	ErrMisaligned = errors.New("arena: misaligned")
	// ErrNotAllocated: a free of a range some byte of which is already free
	// (a double free, or a free of space that was never allocated).
	ErrNotAllocated = errors.New("arena: range not allocated")
	// ErrOutOfRange: a range that reaches below 0 or beyond the capacity.
	ErrOutOfRange = errors.New("arena: range out of range")
	// ErrInvalidConfig: a Config that New cannot honour.
	ErrInvalidConfig = errors.New("arena: invalid config")
)

// NoSpaceError says why an allocation failed: how much is free, how much is
// pinned by pending users, and what to wait for. It is the module's one
// no-space error: an Arena's Alloc fills in the request and the free-space
// figures, and the Allocator of package subarena, which names this type
// subarena.NoSpaceError, fills in the rest. errors.Is(err, ErrNoSpace)
// reports true for it.
type NoSpaceError struct {
	Requested   int64 // bytes asked for, rounded up to the granule
	TotalFree   int64 // bytes free in the whole arena (clean bytes, for an Allocator)
	LargestFree int64 // bytes in the largest free region
	// Held and Pending are an Allocator's: bytes released by the program
	// but not yet returned to the arena, and bytes covered by pending
	// users; an Arena leaves them 0.
	Held    int64
	Pending int64
	// WaitFor is the fence of the smallest set of pending work whose
	// completion would free a run of held bytes large enough, and Wait one
	// event of it (the latest on its engine); HasWait is false when no held
	// run is large enough, and always for an Arena's error.
	WaitFor sasync.Clock
	Wait    sasync.Event
	HasWait bool
}

// Error formats the diagnosis.
func (e *NoSpaceError) Error() string {
	s := fmt.Sprintf("subarena: no space for %d bytes: %d free (largest %d), %d held, %d pending",
		e.Requested, e.TotalFree, e.LargestFree, e.Held, e.Pending)
	if e.HasWait {
		s += fmt.Sprintf("; completing %v would free enough", e.Wait)
	}
	return s
}

// Is makes errors.Is(err, ErrNoSpace) true for a *NoSpaceError.
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }

// The error constructors below run only on failure; keeping them out of
// Alloc and Free keeps those small.

//go:noinline
func (a *Arena) invalidSize(size int64) error {
	return fmt.Errorf("arena: alloc %d B (at most %d): %w", size, a.maxSize, ErrInvalidSize)
}

//go:noinline
func (a *Arena) tooLarge(size int64) error {
	return fmt.Errorf("arena: alloc %d B would grow the arena past %d granules: %w", size, int64(maxGranules), ErrInvalidSize)
}

//go:noinline
func (a *Arena) noSpace(size, n int64) error {
	return fmt.Errorf("arena: alloc %d B: %w", size, &NoSpaceError{
		Requested:   n << a.shift,
		TotalFree:   (a.capG - a.inUseG) << a.shift,
		LargestFree: a.largestFreeG() << a.shift,
	})
}

//go:noinline
func (a *Arena) badFree(off, size int64) error {
	switch {
	case size <= 0:
		return fmt.Errorf("arena: free [%d, +%d): %w", off, size, ErrInvalidSize)
	case (off|size)&a.gmask != 0:
		return fmt.Errorf("arena: free [%d, +%d) with granule %d: %w", off, size, a.gmask+1, ErrMisaligned)
	}
	return fmt.Errorf("arena: free [%d, +%d) outside [0, %d): %w", off, size, a.capG<<a.shift, ErrOutOfRange)
}

//go:noinline
func (a *Arena) notAllocated(lo, hi int64) error {
	return fmt.Errorf("arena: free [%d, %d): %w", lo<<a.shift, hi<<a.shift, ErrNotAllocated)
}

// errTooManyRegions is the panic value of a node slice that would outgrow
// its uint32 handles: 2^30 free regions at once, 32 GiB of nodes.
var errTooManyRegions = errors.New("arena: more than 2^30 free regions")
