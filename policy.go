package subarena

import (
	"fmt"
	"slices"

	"github.com/subarena/subarena/liveness"
)

// Policy is when released bytes return to reuse. Two questions, crossed:
// does a released buffer return whole or by subrange, and only after its
// users complete, or at once, fenced, for writers ordered after them?
//
//	policy                 returns                          models
//	ir-order               at Release, ignoring users       the premature-reuse bug (unsafe)
//	whole-after-users      whole buffer, users completed    ggml-alloc, record_stream polling
//	whole-fenced           whole buffer, fenced, at once    stream-ordered pools
//	subrange-after-users   each subrange, its users done    subrange liveness
//	subrange-fenced        each subrange, fenced, at once   (default)
//
// The zero value is SubrangeFenced. Policy is liveness.Mode, the one
// definition: its methods Whole and Fenced answer the two questions, Safe
// the reuse rule, Valid and String the rest.
type Policy = liveness.Mode

// The release policies.
const (
	// SubrangeFenced returns each subrange at once with its own fence: a
	// writer whose point is ordered after the subrange's pending users may
	// take it before they complete; it becomes clean (and coalesces in the
	// arena) when they complete.
	SubrangeFenced = liveness.SubrangeFenced
	// SubrangeAfterUsers returns each subrange when its own users complete.
	SubrangeAfterUsers = liveness.SubrangeAfterUsers
	// WholeFenced returns the whole buffer at once with one fence.
	WholeFenced = liveness.WholeFenced
	// WholeAfterUsers returns the whole buffer when every user of every
	// view of it has completed.
	WholeAfterUsers = liveness.WholeAfterUsers
	// IROrder returns bytes at Release, ignoring pending users. It is
	// UNSAFE — a reader behind a view chain or on another engine can see the
	// next owner's bytes — and exists only as the baseline the checkers must
	// catch.
	IROrder = liveness.IROrder
)

// ParsePolicy returns the policy named s (as String spells it).
func ParsePolicy(s string) (Policy, error) {
	for p := Policy(0); p.Valid(); p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown policy %q (want one of ir-order, whole-after-users, whole-fenced, subrange-after-users, subrange-fenced)", ErrInvalidConfig, s)
}

// Policies returns all five policies in the order of the design's table:
// ir-order, whole-after-users, whole-fenced, subrange-after-users,
// subrange-fenced.
func Policies() []Policy {
	return []Policy{IROrder, WholeAfterUsers, WholeFenced, SubrangeAfterUsers, SubrangeFenced}
}

// SafePolicies returns the four policies that obey the reuse rule (all but
// IROrder), in the order of Policies.
func SafePolicies() []Policy {
	return slices.DeleteFunc(Policies(), func(p Policy) bool { return !p.Safe() })
}
