package arena

import (
	"fmt"

	"github.com/subarena/subarena/internal/coreenum"
)

// Fit selects how Alloc chooses among free regions large enough for a request.
type Fit uint8

const (
	// FitDefault is the zero value: the recommended strategy (FitLean).
	FitDefault Fit = iota
	// FitFast rounds the request up to the next size class and takes the
	// first region of the first non-empty class at or above it: one bitmap
	// search, no list walk.
	FitFast
	// FitLean walks a few regions of the request's own size class first
	// (it holds regions both smaller and larger than the request) and
	// takes the first that fits; failing that it takes the lower-addressed
	// of the first regions of the two smallest classes whose every region
	// fits. It keeps large regions whole and fragments less, for a bounded
	// list walk.
	FitLean
)

// fitNames holds the name of each Fit, indexed by value.
var fitNames = [...]string{FitDefault: "default", FitFast: "fast", FitLean: "lean"}

// String returns the name ParseFit accepts.
func (f Fit) String() string { return coreenum.Name(fitNames[:], f, "Fit") }

// ParseFit returns the Fit named s ("default", "fast" or "lean").
func ParseFit(s string) (Fit, error) {
	switch s {
	case "default", "":
		return FitDefault, nil
	case "fast":
		return FitFast, nil
	case "lean":
		return FitLean, nil
	}
	return 0, fmt.Errorf("arena: parse fit %q: %w", s, ErrInvalidConfig)
}

// resolve maps FitDefault to the recommended strategy.
func (f Fit) resolve() Fit {
	if f == FitDefault {
		return FitLean
	}
	return f
}

func (f Fit) valid() bool { return f <= FitLean }
