package plan

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/subarena/subarena/internal/invariants"
)

// SolveOptions tunes Solve. The zero value runs the greedy variants only.
type SolveOptions struct {
	// Budget bounds the time spent searching below the best greedy
	// placement. Zero means no search; negative is an error.
	Budget time.Duration
	// Capacity, when positive, ends the search as soon as a placement no
	// higher than it is found (decision mode).
	Capacity int64
	// Stop, when closed, ends the search early; the best placement so far
	// is returned.
	Stop <-chan struct{}
	// Heuristics are the preorders the search cycles through (see
	// DefaultHeuristics for the key letters); nil means DefaultHeuristics.
	Heuristics []string
}

// DefaultHeuristics are the static preorders the search cycles through:
// strings of keys compared in turn, all descending — W lifetime width, A
// area (bytes x time), T the busiest section total over the item's
// lifetime, Z size — ties broken by item index. MiniMalloc's own three
// come first; the other three make the portfolio robust when times are
// compressed to op positions, as in traces, where MiniMalloc's alone
// often miss perfect packings they find on raw times.
var DefaultHeuristics = []string{"TWA", "TAW", "WAT", "TW", "WTA", "TA"}

// split divides a portfolio between the prover and the bisector: the
// first half (MiniMalloc's own preorders, by default) proves, the rest
// bisects. A portfolio of one or two is shared.
func split(heur []string) (prover, bisector []string) {
	if len(heur) < 3 {
		return heur, heur
	}
	h := (len(heur) + 1) / 2
	return heur[:h], heur[h:]
}

// Solution is a placement of a problem.
type Solution struct {
	Offsets []int64 // one per item
	Height  int64   // max offset+size: the arena the placement needs
	// LowerBound is a height no placement is below: the larger of
	// LiveBound and the hole bound. An item whose live bytes at some time
	// are runs with holes between them pins its whole span then, but for
	// what fits in its holes: a live run of another item longer than its
	// largest hole, or one that no hole can take at an offset the pair's
	// conflicts allow, lies outside that span, so the span plus all such
	// runs is a bound (fused Q/K/V projections whose K and V died make it
	// larger than the live bytes).
	LowerBound int64
	// LiveBound is the most bytes live at once (or the largest item).
	LiveBound int64
	Method    string // the variant that produced it
	// Proven is true when no lower placement exists: the height equals the
	// lower bound, or an exhaustive search at one grain below failed.
	Proven bool
	Nodes  int64 // search nodes visited
	Probes int   // decision searches run
	// FirstAt is the time Solve took to its first placement, the best
	// greedy one (validation and compilation included).
	FirstAt time.Duration
}

// Solve places a problem: the best of the greedy variants first, then, if
// opts.Budget allows, decision searches at decreasing capacities between
// the lower bound and the best height so far. Every returned placement has
// been checked with Verify in tests and under the invariants build tag.
func Solve(p *Problem, opts SolveOptions) (Solution, error) {
	if err := p.Validate(); err != nil {
		return Solution{}, err
	}
	if opts.Budget < 0 || opts.Capacity < 0 {
		return Solution{}, fmt.Errorf("budget %v, capacity %d: %w", opts.Budget, opts.Capacity, ErrInvalidOptions)
	}
	start := time.Now()
	c, err := compile(p)
	if err != nil {
		return Solution{}, err
	}
	sol := solveCompiled(c, opts, start)
	if verifySolutions {
		if _, err := Verify(p, sol.Offsets); err != nil {
			return Solution{}, fmt.Errorf("internal: %s produced an invalid placement: %w", sol.Method, err)
		}
	}
	return sol, nil
}

// verifySolutions makes Solve check every placement with Verify before it
// returns it: in test binaries (of any package) and under the invariants
// build tag, not in production, where the solver's placements are valid by
// construction and Verify would cost a quarter of a greedy plan.
var verifySolutions = invariants.Enabled || testing.Testing()

func solveCompiled(c *compiled, opts SolveOptions, start time.Time) Solution {
	live := c.liveBound()
	bound := max(live, c.holeBound())
	lb := alignUp(bound, c.grain) // no placement is lower
	g := newGreedy(c)
	offs, h, method := g.bestUntil(lb)
	sol := Solution{Offsets: offs, Height: h, LowerBound: bound, LiveBound: live, Method: method, FirstAt: time.Since(start)}
	if sol.Height <= lb {
		sol.Proven = true
		return sol
	}
	if opts.Budget == 0 || c.n == 0 || (opts.Capacity > 0 && sol.Height <= opts.Capacity) {
		return sol
	}
	heur := opts.Heuristics
	if len(heur) == 0 {
		heur = DefaultHeuristics
	}
	proverHeur, bisectHeur := split(heur)
	r := &race{sol: sol, done: make(chan struct{}), c: c, lb: lb, capacity: opts.Capacity, infeasible: -1 << 40}
	deadline := start.Add(opts.Budget)
	// Two searches share the budget. The prover asks for the lower bound
	// itself (or the requested capacity): perfect packings are rigid, and
	// section inference finds them fast when they exist. The bisector
	// narrows the gap between the best height and the lower bound with
	// short probes, whose difficulty varies erratically with capacity.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		target := lb
		if opts.Capacity > 0 {
			target = max(lb, opts.Capacity-opts.Capacity%c.grain)
		}
		s := newSearcher(c)
		st := s.decide(target, deadline, opts.Stop, r.done, proverHeur)
		r.report(s, st, target)
	}()
	r.bisect(deadline, opts.Stop, bisectHeur)
	wg.Wait()
	r.finish()
	return r.sol
}

// race holds the best placement two concurrent searches have found.
type race struct {
	mu       sync.Mutex
	sol      Solution
	c        *compiled
	lb       int64
	capacity int64
	done     chan struct{} // closed when no search can improve the result
	closed   bool
	// infeasible is the highest capacity an exhaustive search proved
	// infeasible (whole-buffer problems only), or far below zero.
	infeasible int64
}

// report records a finished decision search at capacity target.
func (r *race) report(s *searcher, st status, target int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sol.Probes++
	r.sol.Nodes += s.nodes
	switch st {
	case found:
		if h := heightOf(r.c, s.solution); h < r.sol.Height {
			r.sol.Height = h
			r.sol.Offsets = append(r.sol.Offsets[:0], s.solution...)
			r.sol.Method = fmt.Sprintf("search at capacity %d", target)
		}
	case notFound:
		if r.c.solidAll {
			r.infeasible = max(r.infeasible, target)
		}
	}
	if r.sol.Height <= r.infeasible+r.c.grain {
		r.sol.Proven = true
	}
	if r.sol.Height <= r.lb || r.sol.Proven || (r.capacity > 0 && r.sol.Height <= r.capacity) {
		r.stop()
	}
}

func (r *race) stop() {
	if !r.closed {
		r.closed = true
		close(r.done)
	}
}

func (r *race) height() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sol.Height
}

// bisect probes capacities strictly between the lower bound and the best
// height, halving the gap: a found placement lowers the top, a failed probe
// raises the bottom. A timed-out probe raises it too, but only softly: the
// difficulty of a capacity is erratic (a lower one may be solved in a
// fraction of the time a higher one resists), so once the two meet, the
// bottom drops back below the best height and the search resumes with fresh
// restarts. Each probe gets a quarter of the time left.
func (r *race) bisect(deadline time.Time, stop <-chan struct{}, heur []string) {
	c := r.c
	s := newSearcher(c)
	s.shuffle = true       // restarts differ from the prover's
	hard := r.lb + c.grain // every capacity below hard is infeasible
	lo := hard             // capacities below lo timed out or are infeasible
	for {
		hi := r.height()
		if hi <= hard || stopped(r.done) || stopped(stop) {
			return
		}
		now := time.Now()
		if !now.Before(deadline) {
			return
		}
		if hi <= lo {
			// Converged on a soft bottom: widen the window again.
			w := (hi - hard) / 8
			lo = max(hard, hi-max(w-w%c.grain, c.grain))
		}
		mid := lo + (hi-c.grain-lo)/2
		target := max(lo, mid-mid%c.grain)
		probeEnd := now.Add(deadline.Sub(now) / 4)
		st := s.decide(target, probeEnd, stop, r.done, heur)
		r.report(s, st, target)
		switch st {
		case notFound:
			lo = target + c.grain
			if c.solidAll {
				hard = max(hard, lo)
			}
		case timedOut:
			lo = target + c.grain
		}
	}
}

// finish marks the result proven when it meets the lower bound.
func (r *race) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stop()
	if r.sol.Height <= r.lb {
		r.sol.Proven = true
	}
}

func stopped(stop <-chan struct{}) bool {
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

func heightOf(c *compiled, offsets []int64) int64 {
	var h int64
	for i, off := range offsets {
		h = max(h, off+c.size[i])
	}
	return h
}
