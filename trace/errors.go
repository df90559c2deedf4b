package trace

import (
	"fmt"
	"strings"
)

// Sentinels. Every error this package returns for bad input matches one of them through
// errors.Is; validation errors come wrapped in a *StepError naming the step and the rule.
// A sentinel of a rule of the format names the rule itself (RuleOf): the rule's name
// lives with the sentinel, and there is no separate list of rules to keep in step.
var (
	// ErrSyntax: the document is not well-formed (JSON or CSV syntax, a value of the
	// wrong type, invalid UTF-8, trailing data).
	ErrSyntax = newSentinel("trace: malformed document", "syntax")
	// ErrFormat: the document is not of a format this package reads.
	ErrFormat = newSentinel("trace: unsupported format", "format")
	// ErrUnknownFormat: a reader (tracefile.Read, tracefile.Detect) could not tell the
	// input as any format it reads: empty or binary input, text that is neither a JSON
	// object nor a MiniMalloc CSV, a JSON object without a "format" key or naming a
	// format (or version) no reader reads. The error says what the input looks like.
	ErrUnknownFormat = newSentinel("trace: not a subarena trace, MiniMalloc CSV or ggml trace", "")
	// ErrUnknownKey: a trace object has a key the format does not define.
	ErrUnknownKey = newSentinel("trace: unknown key", "unknown key")
	// ErrMissingKey: a required key is absent.
	ErrMissingKey = newSentinel("trace: missing key", "missing key")
	// ErrStepKind: a step does not have exactly one kind key.
	ErrStepKind = newSentinel("trace: step must have exactly one kind key", "exactly one kind key")
	// ErrInvalidName: a name is empty or not valid UTF-8.
	ErrInvalidName = newSentinel("trace: invalid name", "empty or invalid name")
	// ErrUnknownName: a step names a buffer, view, op or engine that does not exist (yet).
	ErrUnknownName = newSentinel("trace: unknown name", "unknown name")
	// ErrDuplicateName: a name is introduced twice.
	ErrDuplicateName = newSentinel("trace: duplicate name", "duplicate name")
	// ErrDuplicateEngine: an engine is named twice. It matches ErrDuplicateName too, and
	// has its text.
	ErrDuplicateEngine = newSentinelOf(ErrDuplicateName, "duplicate engine")
	// ErrUseAfterRelease: a step names a released buffer, a discarded view, or a view
	// whose bytes were discarded.
	ErrUseAfterRelease = newSentinel("trace: use after release", "use after release")
	// ErrOutOfBounds: a view covers a byte outside its buffer.
	ErrOutOfBounds = newSentinel("trace: view outside its buffer", "view outside its buffer")
	// ErrShape: shape and strides differ in length, a dimension is negative, or an alloc's
	// shape × elem is not its size.
	ErrShape = newSentinel("trace: bad shape", "")
	// ErrShapeStrides: a view's shape and strides differ in length. ErrShapeStrides,
	// ErrNegativeDim and ErrAllocShape are the rules ErrShape stands for in a trace: each
	// matches ErrShape too, and has its text.
	ErrShapeStrides = newSentinelOf(ErrShape, "shape/strides length mismatch")
	// ErrNegativeDim: a dimension of a shape is negative (see ErrShapeStrides).
	ErrNegativeDim = newSentinelOf(ErrShape, "negative dimension")
	// ErrAllocShape: an alloc's shape × elem is not its size (see ErrShapeStrides).
	ErrAllocShape = newSentinelOf(ErrShape, "shape × elem must equal size")
	// ErrInvalidSize: a size is <= 0.
	ErrInvalidSize = newSentinel("trace: size must be > 0", "size must be > 0")
	// ErrInvalidElem: an element size is <= 0.
	ErrInvalidElem = newSentinel("trace: elem must be > 0", "elem must be > 0")
	// ErrInvalidCost: an op's cost is <= 0.
	ErrInvalidCost = newSentinel("trace: cost must be > 0", "cost must be > 0")
	// ErrInvalidGranule: the granule is not a power of two.
	ErrInvalidGranule = newSentinel("trace: granule must be a power of two", "granule must be a power of two")
	// ErrNoEngines: the engine list is empty.
	ErrNoEngines = newSentinel("trace: at least one engine is required", "engines")
	// ErrWaitOrder: an op waits on (or the host syncs on) an op not yet submitted.
	ErrWaitOrder = newSentinel("trace: wait on an op not yet submitted", "wait on an op not yet submitted")
	// ErrExternal: a step releases an external buffer (externals are never released).
	ErrExternal = newSentinel("trace: external buffers are never released", "release of an external buffer")
	// ErrOverflow: arithmetic on the trace's numbers overflows int64.
	ErrOverflow = newSentinel("trace: arithmetic overflow", "arithmetic overflow")
	// ErrLimit: the input is beyond one of the documented limits (MaxDocumentSize,
	// MaxGranule, ArenaLimit): too large a document, granule, buffer, or too many bytes
	// live at once.
	ErrLimit = newSentinel("trace: beyond a documented limit", "limit")
	// ErrPlan: a plan does not fit its trace (missing or unknown buffers, offsets < 0 or
	// beyond the plan's size).
	ErrPlan = newSentinel("trace: plan does not fit the trace", "")
	// ErrUnsafe: a plan is not safe for its trace (check.Plan found violations).
	ErrUnsafe = newSentinel("trace: plan is unsafe", "")
	// ErrReplay: a trace could not be run on a sync.Timeline (NewOrder), or the replay
	// (package trace/replay) could not drive the Allocator: a timeline or allocator error
	// on a valid trace, wrapped.
	ErrReplay = newSentinel("trace: replay failed", "")
	// ErrStopped: a replay (package trace/replay, or the planner's online replay) ended
	// early because it was told to stop.
	ErrStopped = newSentinel("trace: replay stopped", "")
)

// sentinel is an error sentinel of this package; every one is made by newSentinel or
// newSentinelOf, so Detail and RuleOf find them all without a list to keep in step. One
// that names a rule of the format (rule not empty) gives the rule a *StepError whose
// error matches it breaks (RuleOf). One that refines a coarser sentinel (parent) matches
// that one too, and has its text.
type sentinel struct {
	text, rule string
	parent     error
}

func newSentinel(text, rule string) error { return &sentinel{text: text, rule: rule} }

func newSentinelOf(parent error, rule string) error {
	return &sentinel{text: parent.Error(), rule: rule, parent: parent}
}

// Error returns the sentinel's text.
func (s *sentinel) Error() string { return s.text }

// Is reports whether target is the coarser sentinel s refines.
func (s *sentinel) Is(target error) bool { return s.parent != nil && target == s.parent }

// RuleOf returns the rule of the format that err breaks: the rule named by the first
// sentinel in err's chain that names one (a *StepError's Rule is RuleOf its Err), or ""
// when none does.
func RuleOf(err error) string {
	rule := ""
	eachSentinel(err, func(s *sentinel) bool {
		rule = s.rule
		return rule != ""
	})
	return rule
}

// eachSentinel calls f with every sentinel of this package in err's chain, in the order
// errors.As visits them, until f returns true.
func eachSentinel(err error, f func(*sentinel) bool) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *sentinel:
		if f(e) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return eachSentinel(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if eachSentinel(e, f) {
				return true
			}
		}
	}
	return false
}

// StepError is a validation error: the step index (-1 for the document's top level), the
// rule the step breaks, and the underlying error, which matches one of the sentinels.
type StepError struct {
	// Index is the step's index, -1 for the document's top level.
	Index int
	// Rule is the rule the step breaks: RuleOf(Err).
	Rule string
	// Err is the underlying error; it matches one of the sentinels.
	Err error
	// Line and Column place the error in the document Parse read, both counted from 1
	// (the column in characters): where the JSON stops being well-formed, or the
	// offending key or value, or else the opening brace of the step. Both are 0 when the
	// position is unknown (a Trace built in memory and validated by Resolve).
	Line, Column int

	// pos is the byte offset plus one that Line and Column are computed from once the
	// document is known (0: none).
	pos int64
	// text: the error is in the document's text (its JSON, keys or value types), found
	// before the step is known as a whole; Error then gives the position.
	text bool
}

// Error formats the error as "trace: step I: rule: detail", or, for an error in the
// document's text (malformed JSON, an unknown, duplicate or missing key, a value of the
// wrong type), "trace: line L, column C: step I: rule: detail" (the step only for a
// step). The sentinel's own text, which the rule restates, is left out; errors.Is still
// finds the sentinel. Errors of the trace's meaning name their step and leave the
// position to Line and Column.
func (e *StepError) Error() string {
	msg := Detail(e.Err)
	where := ""
	if e.Line > 0 && e.text {
		where = fmt.Sprintf("line %d, column %d: ", e.Line, e.Column)
	}
	if e.Index < 0 {
		return fmt.Sprintf("trace: %s%s: %s", where, e.Rule, msg)
	}
	return fmt.Sprintf("trace: %sstep %d: %s: %s", where, e.Index, e.Rule, msg)
}

// Detail returns err's text without the text of the sentinel of this package in err's
// chain that it starts with ("<nil>" for nil): what StepError prints after the rule, and
// what an importer's error naming its own rule (ggmltrace.TensorError) prints too.
func Detail(err error) string {
	if err == nil {
		return "<nil>"
	}
	_, detail := splitSentinel(err)
	return detail
}

// splitSentinel splits err's text into the text of the sentinel of this package in
// err's chain that it starts with, followed by ": ", and the rest; prefix is empty when
// the text starts with no sentinel's.
func splitSentinel(err error) (prefix, rest string) {
	msg := err.Error()
	rest = msg
	eachSentinel(err, func(s *sentinel) bool {
		if p := s.text + ": "; strings.HasPrefix(msg, p) {
			prefix, rest = p, msg[len(p):]
			return true
		}
		return false
	})
	return prefix, rest
}

// Unwrap returns the underlying error, so errors.Is matches its sentinel.
func (e *StepError) Unwrap() error { return e.Err }

// stepErr builds a *StepError whose Err wraps sentinel with a formatted detail, under
// the sentinel's rule.
func stepErr(index int, sentinel error, format string, args ...any) error {
	detail := fmt.Sprintf(format, args...)
	return &StepError{Index: index, Rule: RuleOf(sentinel), Err: fmt.Errorf("%w: %s", sentinel, detail)}
}
