package liveness

import "fmt"

// Mode is when released bytes return to reuse; the root package's Policy
// is this type. Two questions, crossed: does a released buffer return
// whole or by subrange, and only after its users complete, or at once,
// fenced, for writers ordered after them?
//
//	mode                   returns                          models
//	ir-order               at Release, ignoring users       the premature-reuse bug (unsafe)
//	whole-after-users      whole buffer, users completed    ggml-alloc, record_stream polling
//	whole-fenced           whole buffer, fenced, at once    stream-ordered pools
//	subrange-after-users   each subrange, its users done    subrange liveness
//	subrange-fenced        each subrange, fenced, at once   (default)
//
// The zero Mode is SubrangeFenced, the Allocator's default. Whole, Fenced
// and Safe answer the two questions and the reuse rule, so that no caller
// needs to list the modes.
type Mode uint8

// The five modes.
const (
	// SubrangeFenced: each released byte returns when no pending user
	// covers its granule, and held bytes whose pending users are all safe
	// for a writer may be taken by it before they complete (SafeRuns,
	// TakeRanges); they become clean (and coalesce in the arena) when the
	// users complete.
	SubrangeFenced Mode = iota
	// SubrangeAfterUsers: each released byte returns when no pending user
	// covers its granule.
	SubrangeAfterUsers
	// WholeFenced: as WholeAfterUsers, and a piece whose pending users are
	// all safe for a writer may be taken by it before they complete.
	WholeFenced
	// WholeAfterUsers: a released buffer (or discarded view) is one piece;
	// none of it returns until no pending user covers any byte of it.
	WholeAfterUsers
	// IROrder ignores pending users entirely: released bytes return at once.
	// It is UNSAFE — a reader behind a view chain or on another engine can
	// see the next owner's bytes — and exists only as the baseline the
	// checkers must catch.
	IROrder
	numModes
)

var modeNames = [numModes]string{
	SubrangeFenced:     "subrange-fenced",
	SubrangeAfterUsers: "subrange-after-users",
	WholeFenced:        "whole-fenced",
	WholeAfterUsers:    "whole-after-users",
	IROrder:            "ir-order",
}

// String returns the mode's name as the CLI's --policy flag spells it
// (IROrder is "ir-order", the order of the program's IR).
func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return fmt.Sprintf("policy(%d)", uint8(m))
}

// Valid reports whether m is one of the five modes.
func (m Mode) Valid() bool { return m < numModes }

// Safe reports whether the mode obeys the reuse rule (all but IROrder).
func (m Mode) Safe() bool { return m < numModes && m != IROrder }

// Whole reports whether released bytes return by piece (a whole released
// buffer or discarded view), never for IROrder.
func (m Mode) Whole() bool { return m == WholeAfterUsers || m == WholeFenced }

// Fenced reports whether held bytes may be taken by a safe writer before
// their users complete.
func (m Mode) Fenced() bool { return m == SubrangeFenced || m == WholeFenced }
