package sync

import "errors"

// Sentinel errors. Every error this package returns wraps exactly the
// sentinels that describe it, so callers test with errors.Is; the wrapping
// text names the engine or event at fault. A call that returns an error has
// changed nothing.
var (
	// ErrUnknownEngine: the EngineID was never returned by AddEngine on this
	// Timeline (or, for an Executor, the engine was added after Start).
	ErrUnknownEngine = errors.New("sync: unknown engine")
	// ErrUnknownEvent: the event names an op that has not been submitted
	// (a seq of 0, a seq beyond the engine's last submission, or an unknown
	// engine).
	ErrUnknownEvent = errors.New("sync: unknown event")
	// ErrAlreadyCompleted: Complete was called for an op already completed,
	// directly or because a later op of its engine, or an op it
	// happens-before, was completed first.
	ErrAlreadyCompleted = errors.New("sync: event already completed")
	// ErrForgotten: the event's clock was dropped by Timeline.Forget; the
	// event has completed.
	ErrForgotten = errors.New("sync: event forgotten")
	// ErrInvalidPoint: a Point claims ordering its Timeline does not have
	// (a clock covering ops that were never submitted, or that the next op
	// of its engine does not happen-after); see Timeline.CheckPoint.
	ErrInvalidPoint = errors.New("sync: invalid point")
	// ErrTooManyEngines: AddEngine would exceed MaxEngines.
	ErrTooManyEngines = errors.New("sync: too many engines")
	// ErrDuplicateEngine: AddEngine was given a name already in use.
	ErrDuplicateEngine = errors.New("sync: duplicate engine name")
	// ErrInvalidEngine: AddEngine was given an empty name or an undefined
	// Kind.
	ErrInvalidEngine = errors.New("sync: invalid engine")
	// ErrClosed: the Executor has been closed; it accepts no more work.
	ErrClosed = errors.New("sync: executor closed")
	// ErrStopped: the Executor stopped because an op failed or its context
	// ended; the returned error also wraps that first cause.
	ErrStopped = errors.New("sync: executor stopped")
)
