package plan

import (
	"slices"
	"time"
)

// The search answers a decision question — is there a placement within
// capacity C? — by depth-first search over canonical placements, after
// MiniMalloc (Moffitt, ASPLOS '23):
//
//   - Canonical: items are placed in non-decreasing offset order, each at its
//     minimum offset, the lowest offset not forbidden by a placed neighbor
//     (for whole buffers: on top of the highest placed conflicting one, or
//     at 0). Every compacted placement is reached this way, so for whole
//     buffers the search is complete.
//   - Dynamic ordering: at each node candidates are tried by minimum offset,
//     ties broken by a static preorder (preorder.go).
//   - Dominance: a candidate whose offset is at or above the top of another
//     unplaced item (its min offset plus size) is skipped: that item fits
//     entirely below and would rather be placed first.
//   - Section inference: time is cut into sections; in each, the floor
//     (lowest offset any unplaced live byte can take) plus the unplaced live
//     bytes must fit in C.
//   - Decomposition: when no unplaced item spans a section boundary, the
//     two sides are independent subproblems and are solved one after the
//     other without backtracking across them.
//   - Hatless items: an item no unplaced item conflicts with fits at its
//     offset in any completion, so if placing it fails, nothing else at
//     that node can succeed.
//   - Restarts: each preorder runs under a node limit; when all have used it
//     up, the limit doubles (round robin), until a deadline. A searcher may
//     break the preorders' ties at random after the first round, so its
//     restarts differ from another searcher's.
//
// Items with several pieces (subrange lifetimes) use the same machinery with
// general forbidden intervals; the search is then a strong heuristic rather
// than complete.

// status is the outcome of a (sub)search.
type status uint8

const (
	found    status = iota // a placement within capacity, recorded in solution
	notFound               // the (sub)tree holds no placement within capacity
	aborted                // the node limit ran out
	timedOut               // the deadline passed or the search was cancelled
)

type offChange struct {
	item int32
	old  int64
}

type secChange struct {
	sec int32
	old int64
}

// searcher is the state of one decision search. All slices are sized once;
// the recursion itself allocates nothing except when the ordering stack
// first grows.
//
// Invariants (CheckInvariants): offset[i] is -1 for unplaced items; placed
// items pairwise respect their forbidden intervals and fit in capacity;
// minOff[j] of an unplaced j is aligned and not forbidden by any placed
// neighbor; total[s] is the sum of unplaced live bytes in section s;
// cuts[s] counts unplaced items whose cut extent spans sections s and s+1.
type searcher struct {
	c            *compiled
	capacity     int64  // the decision: a placement within capacity bytes
	searchState         // the partial placement, its bounds and its undo logs
	searchOrder         // which unplaced item the search tries next
	searchLimits        // when the search gives up: nodes, deadline, cancellation
	afterStep    func() // test hook: runs after every place and undo
}

// searchState is the partial placement a search extends and undoes. The
// per-item slices are sized c.n, the per-section ones c.nsec.
type searchState struct {
	offset   []int64     // per item: its offset, -1 while unplaced
	minOff   []int64     // per item: the lowest offset no placed neighbor forbids
	floor    []int64     // per section: the lowest offset an unplaced live byte can take there
	total    []int64     // per section: the live bytes of the unplaced items
	cuts     []int32     // per section boundary: unplaced items whose cut extent spans it
	solution []int64     // per item: the placement found, when found
	witness  []int32     // per section: an unplaced item last seen low enough (a cache)
	offLog   []offChange // minOff changes, undone on backtracking
	secLog   []secChange // floor changes, undone on backtracking
}

// searchOrder is how a search ranks the unplaced items: by a preorder
// heuristic, ties broken by index or at random.
type searchOrder struct {
	rank     []int32     // per item: its place in the current ordering
	slab     []int32     // stacked orderings, one segment per search depth
	saved    []int32     // stacked ranks of enclosing searches
	keys     []preKey    // per item: the preorder keys (prepareKeys)
	parts    []partition // independent partitions at the root, computed once
	heur     string      // the heuristic of the current round
	tiebreak []int32     // a random rank per item breaking full ties, or nil for index order
	tieBuf   []int32     // scratch of shuffleTies
	rng      uint64      // state of the tie shuffles
	shuffle  bool        // restarts after the first round break ties at random
}

// searchLimits is what ends a search early.
type searchLimits struct {
	nodesLeft int64     // nodes this round may still visit
	nodes     int64     // nodes visited in this decision search
	deadline  time.Time // when the search times out
	stop      <-chan struct{}
	stop2     <-chan struct{} // a second cancellation, either one stops the search
	tick      int             // nodes since start; the clock is read every 256
}

func newSearcher(c *compiled) *searcher {
	s := &searcher{
		c: c,
		searchState: searchState{
			offset:   make([]int64, c.n),
			minOff:   make([]int64, c.n),
			floor:    make([]int64, c.nsec),
			total:    make([]int64, c.nsec),
			cuts:     make([]int32, max(c.nsec-1, 0)),
			solution: make([]int64, c.n),
			witness:  make([]int32, c.nsec),
		},
		searchOrder: searchOrder{rank: make([]int32, c.n)},
	}
	return s
}

// reset clears all placement state for a fresh run.
func (s *searcher) reset() {
	c := s.c
	for i := range s.offset {
		s.offset[i] = -1
		s.minOff[i] = 0
	}
	clear(s.floor)
	clear(s.total)
	for k := range s.witness {
		s.witness[k] = -1
	}
	clear(s.cuts)
	for i := range c.n {
		for _, sp := range c.spans[i] {
			for k := sp.s0; k < sp.s1; k++ {
				s.total[k] += sp.bytes
			}
		}
		e := c.cutExtent[i]
		for k := e[0]; k+1 < e[1]; k++ {
			s.cuts[k]++
		}
	}
	s.offLog = s.offLog[:0]
	s.secLog = s.secLog[:0]
	s.slab = s.slab[:0]
}

// decide searches for a placement within capacity. It returns found with
// the placement in s.solution, notFound when the tree was exhausted (a proof
// of infeasibility for whole-buffer problems), or timedOut.
func (s *searcher) decide(capacity int64, deadline time.Time, stop, stop2 <-chan struct{}, heuristics []string) status {
	s.capacity = capacity
	s.deadline = deadline
	s.stop, s.stop2 = stop, stop2
	s.nodes = 0
	c := s.c
	for i := range c.n {
		if c.size[i] > capacity {
			return notFound
		}
	}
	if s.keys == nil {
		s.prepareKeys()
		s.parts = s.rootPartitions()
	}
	parts := s.parts
	for i := range s.solution {
		s.solution[i] = 0 // items with no live bytes stay at 0
	}
	limit := int64(max(c.n, 16))
	for round := 0; ; round++ {
		limit *= 2
		for _, h := range heuristics {
			s.reset()
			s.heur = h
			s.tiebreak = nil
			if round > 0 && s.shuffle {
				s.shuffleTies()
			}
			s.nodesLeft = limit
			st := found
			for _, p := range parts {
				st = s.subSolve(p.items, p.lo, p.hi)
				if st != found {
					break
				}
			}
			switch st {
			case found, notFound, timedOut:
				return st
			}
		}
	}
}

type partition struct {
	items  []int32
	lo, hi int32 // sections [lo, hi)
}

// rootPartitions splits the items at section boundaries no cut extent spans.
// Items with no live bytes conflict with nothing and are placed at 0.
func (s *searcher) rootPartitions() []partition {
	c := s.c
	var parts []partition
	order := make([]int32, 0, c.n)
	for i := range c.n {
		if e := c.cutExtent[i]; e[0] < e[1] {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return int(c.cutExtent[a][0] - c.cutExtent[b][0]) })
	for _, i := range order {
		e := c.cutExtent[i]
		if m := len(parts); m > 0 && e[0] < parts[m-1].hi {
			parts[m-1].items = append(parts[m-1].items, i)
			parts[m-1].hi = max(parts[m-1].hi, e[1])
			continue
		}
		parts = append(parts, partition{items: []int32{i}, lo: e[0], hi: e[1]})
	}
	return parts
}

// subSolve searches one partition from scratch (offsets restart at 0),
// with ranks from the current section totals. The ranks its items had in
// the enclosing search are restored on return.
func (s *searcher) subSolve(items []int32, lo, hi int32) status {
	saved := len(s.saved)
	for _, i := range items {
		s.saved = append(s.saved, s.rank[i])
	}
	base := len(s.slab)
	s.slab = append(s.slab, items...)
	s.rankItems(s.slab[base:])
	st := s.search(base, len(items), lo, hi, 0, -1)
	s.slab = s.slab[:base]
	for k, i := range items {
		s.rank[i] = s.saved[saved+k]
	}
	s.saved = s.saved[:saved]
	return st
}

// search is one node: the unplaced items of the partition are the
// still-unplaced entries of slab[pBase : pBase+pLen], the parent's ordering.
func (s *searcher) search(pBase, pLen int, lo, hi int32, lastOff int64, lastRank int32) status {
	if s.nodesLeft <= 0 {
		return aborted
	}
	s.nodesLeft--
	s.nodes++
	if s.tick++; s.tick&255 == 0 && s.expired() {
		return timedOut
	}
	c := s.c
	// Child ordering: unplaced items by (min offset, rank). The parent's
	// ordering is nearly sorted, so insertion sort is close to linear.
	base := len(s.slab)
	minHeight := int64(1) << 62
	for k := pBase; k < pBase+pLen; k++ {
		i := s.slab[k]
		if s.offset[i] >= 0 {
			continue
		}
		top := s.minOff[i] + c.size[i]
		if top > s.capacity {
			s.slab = s.slab[:base]
			return notFound // min offsets only grow: i can never fit
		}
		minHeight = min(minHeight, top)
		s.slab = append(s.slab, i)
		for m := len(s.slab) - 1; m > base && s.less(s.slab[m], s.slab[m-1]); m-- {
			s.slab[m], s.slab[m-1] = s.slab[m-1], s.slab[m]
		}
	}
	n := len(s.slab) - base
	if n == 0 {
		return found
	}
	// failLo..failHi bound the sections that already fail section
	// inference at offset failOff before anything is placed there; a
	// candidate not live in all of them cannot mend them.
	failOff, failLo, failHi := int64(-1), int32(0), int32(0)
	for k := base; k < base+n; k++ {
		i := s.slab[k]
		off := s.minOff[i]
		if off < lastOff || (off == lastOff && s.rank[i] < lastRank) {
			continue // not canonical: i belongs before the last placed item
		}
		if off >= minHeight {
			break // dominated, and so is every later candidate (higher offsets)
		}
		if off != failOff {
			failOff = off
			failLo, failHi = s.failing(lo, hi, off)
		}
		if failLo < failHi {
			if e := c.extent[i]; failLo < e[0] || failHi > e[1] {
				continue
			}
		}
		offMark, secMark := len(s.offLog), len(s.secLog)
		hatless := s.place(i, off)
		st := notFound
		if s.check(lo, hi, off) {
			st = s.descend(i, base, n, lo, hi, off)
		}
		s.undo(i, offMark, secMark)
		if st != notFound {
			s.slab = s.slab[:base]
			return st
		}
		if hatless {
			// i conflicts with no unplaced item: it fits here in any
			// completion, so no other choice at this node can succeed.
			break
		}
	}
	s.slab = s.slab[:base]
	return notFound
}

// less orders candidates by min offset, then preorder rank.
func (s *searcher) less(a, b int32) bool {
	if s.minOff[a] != s.minOff[b] {
		return s.minOff[a] < s.minOff[b]
	}
	return s.rank[a] < s.rank[b]
}

// descend continues below the placement of item i: if that placement left
// no unplaced item spanning some section boundary, the sides are solved as
// independent partitions; otherwise the search goes one level deeper.
func (s *searcher) descend(i int32, base, n int, lo, hi int32, off int64) status {
	c := s.c
	e := c.cutExtent[i]
	split := false
	for k := e[0]; k+1 < e[1]; k++ {
		s.cuts[k]--
		if s.cuts[k] == 0 && k+1 > lo && k+1 < hi {
			split = true
		}
	}
	st := found
	if !split {
		st = s.search(base, n, lo, hi, off, s.rank[i])
	} else {
		// Sub-partitions between consecutive zero-cut boundaries.
		from := lo
		for k := lo; k < hi; k++ {
			if k+1 < hi && s.cuts[k] != 0 {
				continue
			}
			to := k + 1
			subBase := len(s.slab)
			for q := base; q < base+n; q++ {
				j := s.slab[q]
				if s.offset[j] < 0 && c.cutExtent[j][0] < to && c.cutExtent[j][1] > from {
					s.slab = append(s.slab, j)
				}
			}
			items := s.slab[subBase:]
			if len(items) > 0 {
				// subSolve copies items above them on the slab.
				st = s.subSolve(items, from, to)
			}
			s.slab = s.slab[:subBase]
			from = to
			if st != found {
				break
			}
		}
	}
	for k := e[0]; k+1 < e[1]; k++ {
		s.cuts[k]++
	}
	return st
}

func (s *searcher) expired() bool {
	if stopped(s.stop) || stopped(s.stop2) {
		return true
	}
	return !s.deadline.IsZero() && time.Now().After(s.deadline)
}

// place puts item i at off and updates min offsets and section data,
// logging every change for undo. It reports whether i is hatless: no
// unplaced item conflicts with it.
func (s *searcher) place(i int32, off int64) bool {
	c := s.c
	s.offset[i] = off
	s.solution[i] = off
	for _, sp := range c.spans[i] {
		f := off + sp.run0
		for k := sp.s0; k < sp.s1; k++ {
			s.total[k] -= sp.bytes
			if f > s.floor[k] {
				s.secLog = append(s.secLog, secChange{k, s.floor[k]})
				s.floor[k] = f
			}
		}
	}
	hatless := true
	for _, e := range c.edges[i] {
		j := e.other
		if s.offset[j] >= 0 {
			continue
		}
		hatless = false
		x := max(s.minOff[j], off)
		if c.solidAll {
			x = max(x, alignUp(off+c.size[i], c.align))
		} else {
			x = s.lowestFeasible(j, x)
		}
		if x == s.minOff[j] {
			continue
		}
		s.offLog = append(s.offLog, offChange{j, s.minOff[j]})
		s.minOff[j] = x
	}
	if s.afterStep != nil {
		s.afterStep()
	}
	return hatless
}

// lowestFeasible returns the lowest aligned offset at or above x that no
// placed neighbor of j forbids.
func (s *searcher) lowestFeasible(j int32, x int64) int64 {
	c := s.c
	x = alignUp(x, c.align)
	for changed := true; changed; {
		changed = false
		for _, e := range c.edges[j] {
			b := s.offset[e.other]
			if b < 0 {
				continue
			}
			for _, r := range e.rels {
				if b+r.lo <= x && x < b+r.hi {
					x = alignUp(b+r.hi, c.align)
					changed = true
				}
			}
		}
	}
	return x
}

// undo reverts place(i, ...) given the log marks taken before it.
func (s *searcher) undo(i int32, offMark, secMark int) {
	c := s.c
	for k := len(s.secLog) - 1; k >= secMark; k-- {
		ch := s.secLog[k]
		s.floor[ch.sec] = ch.old
	}
	s.secLog = s.secLog[:secMark]
	for _, sp := range c.spans[i] {
		for k := sp.s0; k < sp.s1; k++ {
			s.total[k] += sp.bytes
		}
	}
	for k := len(s.offLog) - 1; k >= offMark; k-- {
		ch := s.offLog[k]
		s.minOff[ch.item] = ch.old
	}
	s.offLog = s.offLog[:offMark]
	s.offset[i] = -1
	if s.afterStep != nil {
		s.afterStep()
	}
}

// check applies section inference over the partition's sections: the floor
// plus the unplaced live bytes must fit in capacity. The floor is the
// highest of the offset just placed (offsets never decrease), the tops of
// the placed items' runs from byte 0, and the lowest min offset of the
// unplaced items live in the section (none of their bytes can sit lower).
func (s *searcher) check(lo, hi int32, off int64) bool {
	for k := lo; k < hi; k++ {
		t := s.total[k]
		if t == 0 {
			continue
		}
		room := s.capacity - t // the floor must not exceed room
		if max(off, s.floor[k]) > room {
			return false
		}
		if w := s.witness[k]; w >= 0 && s.offset[w] < 0 && s.minOff[w] <= room {
			continue // the last unplaced item found low enough still is
		}
		ok := false
		for _, j := range s.c.secItems[k] {
			if s.offset[j] < 0 && s.minOff[j] <= room {
				s.witness[k] = j
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// failing returns the smallest section range [fLo, fHi) holding every
// section of [lo, hi) that fails section inference if the next item goes at
// off, before that item's own bytes are accounted for. Placing an item only
// raises floors and lowers totals of its own sections, so an item whose
// live sections do not cover the range cannot pass check.
func (s *searcher) failing(lo, hi int32, off int64) (int32, int32) {
	fLo, fHi := int32(0), int32(0)
	for k := lo; k < hi; k++ {
		if t := s.total[k]; t > 0 && max(off, s.floor[k])+t > s.capacity {
			if fLo == fHi {
				fLo = k
			}
			fHi = k + 1
		}
	}
	return fLo, fHi
}

// forbidden reports whether d lies in one of the intervals.
func forbidden(rs []rel, d int64) bool {
	for _, r := range rs {
		if r.lo <= d && d < r.hi {
			return true
		}
	}
	return false
}
