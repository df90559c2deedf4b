package arena

import (
	"fmt"
	"slices"
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

// String returns the name ParseFit accepts.
func (f Fit) String() string {
	if int(f) < len(fitNames) && fitNames[f] != "" {
		return fitNames[f]
	}
	return fmt.Sprintf("Fit(%d)", uint8(f))
}

// fitNames holds the name of each Fit, indexed by value: String returns
// them and ParseFit looks them up.
var fitNames = [...]string{FitDefault: "default", FitFast: "fast", FitLean: "lean"}

// ParseFit returns the Fit named s ("default", "fast" or "lean"); the empty
// string is "default".
func ParseFit(s string) (Fit, error) {
	if s == "" {
		return FitDefault, nil
	}
	if i := slices.Index(fitNames[:], s); i >= 0 {
		return Fit(i), nil
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
