package plan

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every error returned by this package matches one of these
// with errors.Is and carries context about the offending item or step.
var (
	// ErrInvalidProblem reports a malformed problem: a size or byte range out
	// of bounds, an empty time window, a bad alignment, an unknown piece.
	ErrInvalidProblem = errors.New("plan: invalid problem")
	// ErrConflict reports a placement in which two items share a byte while
	// they may not: some piece of each is live at a common time (or the two
	// pieces are concurrent) and their placed byte ranges intersect.
	ErrConflict = errors.New("plan: conflicting placement")
	// ErrInfeasible reports that no placement within the requested capacity
	// was found. For a decision search it does not prove that none exists
	// unless the search finished within its limits.
	ErrInfeasible = errors.New("plan: no placement within capacity")
	// ErrInvalidTrace reports a trace the planner cannot derive a problem
	// from (for example a view with a layout that does not fit its buffer).
	ErrInvalidTrace = errors.New("plan: invalid trace")
	// ErrInvalidOptions reports a negative budget or similar misuse.
	ErrInvalidOptions = errors.New("plan: invalid options")
	// ErrTooLarge: the problem has more buffers live at once than the
	// planner can hold (see maxItemSections).
	ErrTooLarge = errors.New("plan: problem too large")
)

// Time is a position in a linear order of the ops that is consistent with
// happens-before (for a trace: the submission order). Time windows are
// half-open: [Start, End) is live at Start, ..., End-1.
type Time = int

// Piece is one occupancy rectangle of an item: bytes [Lo, Hi) of the item
// are live during times [Start, End).
//
//	bytes ^
//	  Hi  |   +-----------+
//	      |   |   piece   |
//	  Lo  |   +-----------+
//	      +---Start-------End----> time
//
// An item whose bytes die at different times is described by several pieces.
type Piece struct {
	Lo, Hi     int64 // byte range within the item, 0 <= Lo < Hi <= Size
	Start, End Time  // time window, Start < End
}

// Bytes is the number of bytes the piece covers, Hi - Lo.
func (p Piece) Bytes() int64 { return p.Hi - p.Lo }

// Item is one thing to place: a buffer, or several buffers that must keep
// fixed offsets relative to each other (an in-place chain). Its offset
// applies to all of its pieces. An item with no pieces occupies nothing and
// is placed at 0.
type Item struct {
	Name   string
	Size   int64
	Pieces []Piece
}

// Whole returns an item whose bytes are all live during [start, end): the
// classic whole-buffer lifetime of MiniMalloc and most arena planners.
func Whole(name string, size int64, start, end Time) Item {
	return Item{Name: name, Size: size, Pieces: []Piece{{Lo: 0, Hi: size, Start: start, End: end}}}
}

// PieceRef names piece Piece of item Item.
type PieceRef struct {
	Item, Piece int
}

// PiecePair is an unordered pair of pieces of two different items.
type PiecePair struct {
	A, B PieceRef
}

// Problem is an offline placement problem. Two pieces of different items
// conflict — their placed byte ranges must be disjoint — when their time
// windows intersect, or when they are listed in Concurrent. Pieces whose
// windows are disjoint and that are not listed may share bytes.
//
// Concurrent exists for traces with several engines: time is then one
// linear order consistent with happens-before, and two pieces whose windows
// are disjoint in it may still be unordered by happens-before (the users of
// one do not all happen-before the users of the other). Such pairs must not
// share bytes, so they are listed. Windows that intersect always conflict:
// if every user of one piece happened-before every user of the other, the
// windows would be disjoint in every linear order.
type Problem struct {
	Items      []Item
	Align      int64 // offsets are multiples of Align; 0 means 1
	Concurrent []PiecePair
}

// maxSize keeps every sum of offsets and sizes the planner forms far from
// int64 overflow.
const maxSize = math.MaxInt64 / 8

// align returns the problem's alignment, 1 when unset.
func (p *Problem) align() int64 {
	if p.Align <= 0 {
		return 1
	}
	return p.Align
}

// Validate reports the first rule the problem breaks, wrapped around
// ErrInvalidProblem, or nil.
func (p *Problem) Validate() error {
	if p == nil {
		return fmt.Errorf("nil problem: %w", ErrInvalidProblem)
	}
	if p.Align < 0 || (p.Align > 0 && p.Align&(p.Align-1) != 0) {
		return fmt.Errorf("alignment %d is not a power of two: %w", p.Align, ErrInvalidProblem)
	}
	var total int64
	for i, it := range p.Items {
		if it.Size <= 0 || it.Size > maxSize {
			return fmt.Errorf("item %d (%q): size %d out of range: %w", i, it.Name, it.Size, ErrInvalidProblem)
		}
		total += it.Size
		if total > maxSize {
			return fmt.Errorf("item %d (%q): total size overflows: %w", i, it.Name, ErrInvalidProblem)
		}
		for k, pc := range it.Pieces {
			if pc.Lo < 0 || pc.Hi > it.Size || pc.Lo >= pc.Hi {
				return fmt.Errorf("item %d (%q) piece %d: bytes [%d, %d) outside [0, %d) or empty: %w",
					i, it.Name, k, pc.Lo, pc.Hi, it.Size, ErrInvalidProblem)
			}
			if pc.Start >= pc.End || pc.Start < 0 {
				return fmt.Errorf("item %d (%q) piece %d: time window [%d, %d) empty or negative: %w",
					i, it.Name, k, pc.Start, pc.End, ErrInvalidProblem)
			}
		}
	}
	for k, pp := range p.Concurrent {
		for _, r := range [2]PieceRef{pp.A, pp.B} {
			if r.Item < 0 || r.Item >= len(p.Items) || r.Piece < 0 || r.Piece >= len(p.Items[r.Item].Pieces) {
				return fmt.Errorf("concurrent pair %d: unknown piece %+v: %w", k, r, ErrInvalidProblem)
			}
		}
		if pp.A.Item == pp.B.Item {
			return fmt.Errorf("concurrent pair %d: both pieces belong to item %d: %w", k, pp.A.Item, ErrInvalidProblem)
		}
	}
	return nil
}

// alignUp rounds x up to a multiple of a (a power of two).
func alignUp(x, a int64) int64 {
	return (x + a - 1) &^ (a - 1)
}
