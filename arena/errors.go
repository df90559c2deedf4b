package arena

import (
	"errors"
	"fmt"
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

// NoSpaceError is the error Alloc returns when no free region can hold a
// request. errors.Is(err, ErrNoSpace) reports true for it.
type NoSpaceError struct {
	Requested   int64 // bytes asked for, rounded up to the granule
	TotalFree   int64 // bytes free in the whole arena
	LargestFree int64 // bytes in the largest free region
}

// Error reports the request and the free-space figures.
func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("arena: no space: requested %d B, total free %d B, largest free %d B",
		e.Requested, e.TotalFree, e.LargestFree)
}

// Is makes errors.Is(err, ErrNoSpace) true for a *NoSpaceError.
func (e *NoSpaceError) Is(target error) bool { return target == ErrNoSpace }
