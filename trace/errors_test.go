package trace

import (
	"errors"
	"fmt"
	"testing"
)

// TestRuleOf: every sentinel that names a rule gives it through any wrapping, the
// refinements of ErrShape and ErrDuplicateName match their parent and keep its text,
// and an error with no such sentinel has no rule.
func TestRuleOf(t *testing.T) {
	for _, c := range []struct {
		err    error
		rule   string
		parent error
	}{
		{ErrOverflow, "arithmetic overflow", nil},
		{ErrNegativeDim, "negative dimension", ErrShape},
		{ErrAllocShape, "shape × elem must equal size", ErrShape},
		{ErrShapeStrides, "shape/strides length mismatch", ErrShape},
		{ErrDuplicateEngine, "duplicate engine", ErrDuplicateName},
		{ErrInvalidName, "empty or invalid name", nil},
	} {
		wrapped := &StepError{Index: 3, Err: fmt.Errorf("%w: detail", c.err)}
		if got := RuleOf(wrapped); got != c.rule {
			t.Errorf("RuleOf(%v) = %q, want %q", wrapped, got, c.rule)
		}
		if c.parent != nil && (!errors.Is(wrapped, c.parent) || c.err.Error() != c.parent.Error()) {
			t.Errorf("%v does not refine %v", c.err, c.parent)
		}
	}
	for _, err := range []error{nil, errors.New("x"), ErrShape, ErrPlan, fmt.Errorf("%w", ErrUnknownFormat)} {
		if got := RuleOf(err); got != "" {
			t.Errorf("RuleOf(%v) = %q, want none", err, got)
		}
	}
}
