package plan

import "sync"

// deriveScratch is the memory a derivation grows: the pieces it builds,
// their deaths, and the scratch reused from root to root. A derivation
// takes one from the plan's Scratch (or scratchPool without one) and the
// planner hands it back once done with the problem (derived.release), so
// that planning a graph of about the size of one planned before grows
// nothing.
type deriveScratch struct {
	pieces        []Piece
	deaths        []Time
	used          []itemUse
	dead          []deathRun
	bounds, merge []int64
	segs          []segment
	on            []int
}

var scratchPool = sync.Pool{New: func() any { return new(deriveScratch) }}

// Scratch is memory the planner reuses from plan to plan: the pieces of the
// problems it derives and their per-buffer scratch. A caller that plans
// graph after graph (a graph allocator) keeps one and passes it in
// Options.Scratch, so that planning a graph about the size of one planned
// before grows nothing; without one, Plan draws from a pool that the
// garbage collector empties. Safe for concurrent use; the zero value is
// ready.
type Scratch struct {
	mu   sync.Mutex
	free []*deriveScratch
	ips  []*inplaceScratch
}

// getInplace returns memory for one inplacer: s's, or fresh for nil.
func (s *Scratch) getInplace() *inplaceScratch {
	if s == nil {
		return &inplaceScratch{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return popOr(&s.ips, func() *inplaceScratch { return &inplaceScratch{} })
}

// putInplace takes sc back (nothing for a nil s).
func (s *Scratch) putInplace(sc *inplaceScratch) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ips = append(s.ips, sc)
	s.mu.Unlock()
}

// get returns scratch for one derivation: s's, or the pool's for nil.
func (s *Scratch) get() *deriveScratch {
	if s == nil {
		return scratchPool.Get().(*deriveScratch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return popOr(&s.free, func() *deriveScratch { return new(deriveScratch) })
}

// popOr removes and returns the last of *free, or fresh() when it is
// empty.
func popOr[T any](free *[]*T, fresh func() *T) *T {
	n := len(*free)
	if n == 0 {
		return fresh()
	}
	x := (*free)[n-1]
	*free = (*free)[:n-1]
	return x
}

// put takes sc back.
func (s *Scratch) put(sc *deriveScratch) {
	if s == nil {
		scratchPool.Put(sc)
		return
	}
	s.mu.Lock()
	s.free = append(s.free, sc)
	s.mu.Unlock()
}

// release hands d's memory back for later derivations, and that of the
// fine pieces built beside it when nothing took them (deriveFrom). Neither
// d's problem nor anything read from it may be used after.
func (d *derived) release() {
	if d == nil {
		return
	}
	if d.fine != nil {
		d.fine.save()
		d.scratch = append(d.scratch, d.fine.scratch)
		d.fine = nil
	}
	for _, s := range d.scratch {
		if verifySolutions { // tests: a problem read after its release reads nonsense
			clear(s.pieces[:cap(s.pieces)])
			clear(s.deaths[:cap(s.deaths)])
		}
		d.home.put(s)
	}
	d.scratch = nil
}
