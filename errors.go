package subarena

import (
	"errors"

	"github.com/subarena/subarena/arena"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Sentinel errors. Every error the Allocator returns matches one of these
// (or a sentinel of packages arena, strided or sync) with errors.Is, and a
// call that returns an error has changed nothing.
var (
	// ErrNoSpace: no bytes safe for the requested point fit; the error is a
	// *NoSpaceError telling why.
	ErrNoSpace = arena.ErrNoSpace
	// ErrInvalidSize: a size is zero, negative or overflows.
	ErrInvalidSize = arena.ErrInvalidSize
	// ErrInvalidConfig: New was given a bad Config.
	ErrInvalidConfig = errors.New("subarena: invalid config")
	// ErrReleased: the buffer was released, or the bytes discarded, claimed
	// away or donated.
	ErrReleased = errors.New("subarena: buffer released")
	// ErrDoubleRelease: Release of a released buffer, or Discard of bytes
	// none of which are still held by the program.
	ErrDoubleRelease = errors.New("subarena: double release")
	// ErrOutOfBounds: a view covers bytes outside its buffer.
	ErrOutOfBounds = strided.ErrOutOfBounds
	// ErrInvalidLayout: a view's layout is malformed.
	ErrInvalidLayout = strided.ErrInvalidLayout
	// ErrUnknownEvent: the event was never submitted on the Timeline.
	ErrUnknownEvent = sasync.ErrUnknownEvent
	// ErrUnknownEngine: the engine does not exist on the Timeline.
	ErrUnknownEngine = sasync.ErrUnknownEngine
	// ErrInvalidPoint: Alloc was given a Point its Timeline could not have
	// produced (see sync.Timeline.CheckPoint).
	ErrInvalidPoint = sasync.ErrInvalidPoint
	// ErrPending: the operation needs bytes no other user still uses
	// (Donate, Claim), and some pending user does.
	ErrPending = errors.New("subarena: bytes still have pending users")
	// ErrClaimed: the bytes are claimed for eviction; no new user may take them.
	ErrClaimed = errors.New("subarena: bytes claimed")
	// ErrForeign: the buffer, view, claim or reservation belongs to another
	// Allocator, or is nil or a zero value no Allocator made.
	ErrForeign = errors.New("subarena: buffer of another allocator")
	// ErrUnordered: a use of bytes handed over fenced is not ordered after
	// their previous owner's users (the op does not happen-after the fence
	// the buffer carries).
	ErrUnordered = errors.New("subarena: use not ordered after previous owner's users")
	// ErrInvalidAccess: an Access other than Read, Write or ReadWrite.
	ErrInvalidAccess = errors.New("subarena: invalid access")
	// ErrNotDense: Donate needs a view whose bytes are one gap-free run.
	ErrNotDense = errors.New("subarena: view is not dense")
	// ErrFinished: a Claim or Reservation was already committed, abandoned,
	// activated or cancelled.
	ErrFinished = errors.New("subarena: already finished")
	// ErrInvalidWait: AllocWaiting's SpaceWait has no Executor, or one that
	// runs another Timeline than the Allocator's.
	ErrInvalidWait = errors.New("subarena: invalid space wait")
)

// NoSpaceError says why an allocation failed: how much is free, how much is
// pinned by pending users, and what to wait for (WaitFor, Wait, HasWait).
// It matches ErrNoSpace. It is arena.NoSpaceError, the one definition the
// arena and the Allocator share: errors.As finds it whichever made it.
type NoSpaceError = arena.NoSpaceError
