package arena

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/subarena/subarena/internal/invariants"
)

// errCorrupt wraps every invariant violation CheckInvariants reports.
var errCorrupt = errors.New("arena: invariant violated")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
}

// verify panics with the first broken invariant; in builds with the
// invariants tag every mutator defers it.
func (a *Arena) verify() { invariants.Hold(a.CheckInvariants()) }

// CheckInvariants verifies the whole free-space index and returns the first
// violation it finds, or nil. It checks that:
//
//   - the counters are consistent: 0 <= InUse <= Capacity, PeakInUse >= InUse,
//     HighWater <= Capacity, Capacity within the granule limit;
//   - every live node is chained exactly once, under the bucket of its last
//     granule; chains are at most 64 long and in increasing order of end; the tail bitmap marks exactly
//     the non-empty buckets and every summary bit is set exactly when the
//     word below is non-zero;
//   - the free regions, sorted by address, are non-empty, inside
//     [0, Capacity), disjoint and fully coalesced (no two touch), so
//     in-use + free = capacity;
//   - every live node is in exactly one class list, the list of
//     classOf(its size), circular through the class's head with consistent
//     prev/next links, and the class bitmap marks exactly the non-empty
//     lists; the heads are those of the classes up to that of the capacity
//     (all classes when unbounded) and unchanged but for their links;
//   - every used slot of the node slice is a class head, a live node or on
//     the retired list, exactly one of them, and every stored handle is a
//     used slot's; the retired list is not empty (Free takes its slot from
//     there).
//
// It costs O(capacity/64 + nodes) and allocates; it is for tests.
func (a *Arena) CheckInvariants() error {
	if err := a.checkCounters(); err != nil {
		return err
	}
	if err := a.checkTailBits(); err != nil {
		return err
	}
	nn := len(a.nodes)
	fresh := int(a.fresh)
	if fresh > nn || int(a.nheads) >= fresh || nn > maxSlots {
		return corrupt("%d node slots, %d class heads, first unused slot %d", nn, a.nheads, fresh)
	}
	seen := make([]uint8, nn)
	live, err := a.checkChains(seen)
	if err != nil {
		return err
	}
	if err := a.checkRegions(live); err != nil {
		return err
	}
	if err := a.checkClassLists(seen); err != nil {
		return err
	}
	if err := a.checkClassBits(); err != nil {
		return err
	}
	return a.checkRetired(seen, len(live)+int(a.nheads))
}

// What CheckInvariants has seen of each node slot.
const (
	seenChain = 1 << iota
	seenClass
	seenRetired
)

// checkCounters checks the capacity and the in-use, peak and high-water
// counters.
func (a *Arena) checkCounters() error {
	if a.capG < 0 || a.capG > maxGranules {
		return corrupt("capacity %d granules outside [0, %d]", a.capG, int64(maxGranules))
	}
	if a.capB != a.capG<<a.shift {
		return corrupt("capacity %d B for %d granules", a.capB, a.capG)
	}
	if !a.unbounded && a.capG != a.initCap {
		return corrupt("bounded capacity %d changed from %d", a.capG, a.initCap)
	}
	if a.inUseG < 0 || a.inUseG > a.capG || a.peakG < a.inUseG || a.highG > a.capG || a.highG < 0 {
		return corrupt("counters: in use %d, peak %d, high water %d, capacity %d", a.inUseG, a.peakG, a.highG, a.capG)
	}
	return nil
}

// checkChains checks the tail buckets: every chained node is live,
// chained once, under the bucket of its last granule, and the bitmap marks
// exactly the non-empty chains. It returns the chained nodes.
func (a *Arena) checkChains(seen []uint8) ([]uint32, error) {
	if int64(len(a.chains)) != a.tails.size() {
		return nil, corrupt("%d chains for %d buckets", len(a.chains), a.tails.size())
	}
	var live []uint32
	for w, h := range a.chains {
		prevEnd := int64(-1)
		bit := a.tails.level[0][w>>6]&(1<<(uint(w)&63)) != 0
		if bit != (h != none) {
			return nil, corrupt("bucket %d: bit %v, chain head %d", w, bit, h)
		}
		for k := 0; h != none; h, k = a.node(h).chain, k+1 {
			if !a.validNode(h) {
				return nil, corrupt("bucket %d: handle %d is no node slot", w, h)
			}
			if k >= 1<<bucketShift {
				return nil, corrupt("bucket %d: chain longer than %d", w, 1<<bucketShift)
			}
			n := *a.node(h)
			switch {
			case seen[h>>handleShift]&seenChain != 0:
				return nil, corrupt("node %d chained twice", h)
			case n.class == 0:
				return nil, corrupt("bucket %d chains retired node %d", w, h)
			case (n.hi-1)>>bucketShift != int64(w):
				return nil, corrupt("node %d ending at %d chained in bucket %d", h, n.hi, w)
			case n.hi <= prevEnd:
				return nil, corrupt("bucket %d: node %d ending at %d chained after one ending at %d", w, h, n.hi, prevEnd)
			}
			prevEnd = n.hi
			seen[h>>handleShift] |= seenChain
			live = append(live, h)
		}
	}
	if len(live) != a.nfree {
		return nil, corrupt("%d regions chained, count says %d", len(live), a.nfree)
	}
	return live, nil
}

// checkRegions checks the free regions in address order: non-empty,
// inside the capacity, disjoint and fully coalesced, adding up with the
// bytes in use to the capacity.
func (a *Arena) checkRegions(live []uint32) error {
	slices.SortFunc(live, func(x, y uint32) int { return cmp.Compare(a.node(x).lo, a.node(y).lo) })
	var freeG, prevHi int64 = 0, -1
	for _, h := range live {
		n := *a.node(h)
		switch {
		case n.lo >= n.hi || n.lo < 0 || n.hi > a.capG:
			return corrupt("region [%d, %d) empty or outside [0, %d)", n.lo, n.hi, a.capG)
		case n.lo <= prevHi:
			return corrupt("region [%d, %d) overlaps or touches the region ending at %d", n.lo, n.hi, prevHi)
		}
		freeG += n.hi - n.lo
		prevHi = n.hi
	}
	if err := a.checkLargest(live); err != nil {
		return err
	}
	if freeG+a.inUseG != a.capG {
		return corrupt("free %d + in use %d != capacity %d granules", freeG, a.inUseG, a.capG)
	}
	return nil
}

// checkClassLists checks the class lists: circular through their heads,
// each listing free regions of its class exactly once, the bitmap marking
// exactly the non-empty ones.
func (a *Arena) checkClassLists(seen []uint8) error {
	if want := uint32(numClasses); !a.unbounded {
		if want = uint32(classOf(max(a.capG, 1))) + 1; a.nheads != want {
			return corrupt("%d class heads, want %d", a.nheads, want)
		}
	} else if a.nheads != want {
		return corrupt("%d class heads, want %d", a.nheads, want)
	}
	count := 0
	for c := 0; c < int(a.nheads); c++ {
		head := a.nodes[c]
		hc := headOf(c)
		if head.lo != headLo || head.hi != headLo || head.class != uint32(c) {
			return corrupt("class head %d altered: %+v", c, head)
		}
		empty := head.next == hc
		if c == 0 {
			if !empty || head.prev != hc {
				return corrupt("class 0 holds no size but lists nodes")
			}
			continue
		}
		word := a.classes.word[c>>6]&(1<<(uint(c)&63)) != 0
		if word == empty {
			return corrupt("class %d: bitmap %v, empty %v", c, word, empty)
		}
		n, err := a.checkClassList(c, seen)
		if err != nil {
			return err
		}
		count += n
	}
	if count != a.nfree {
		return corrupt("%d nodes in class lists, %d free regions", count, a.nfree)
	}
	return nil
}

// checkClassList checks class c's list and returns its length.
func (a *Arena) checkClassList(c int, seen []uint8) (int, error) {
	hc := headOf(c)
	prev, count := hc, 0
	for h := a.nodes[c].next; h != hc; h = a.node(h).next {
		if !a.validNode(h) {
			return 0, corrupt("class %d: handle %d is no node slot", c, h)
		}
		n := *a.node(h)
		switch {
		case seen[h>>handleShift]&seenClass != 0:
			return 0, corrupt("node %d listed twice in the classes", h)
		case seen[h>>handleShift]&seenChain == 0:
			return 0, corrupt("class %d lists node %d that is no free region", c, h)
		case n.prev != prev:
			return 0, corrupt("node %d: prev %d, want %d", h, n.prev, prev)
		case int(n.class) != c || classOf(n.hi-n.lo) != c:
			return 0, corrupt("node %d of %d granules in class %d, marked %d, want %d", h, n.hi-n.lo, c, n.class, classOf(n.hi-n.lo))
		}
		seen[h>>handleShift] |= seenClass
		prev = h
		count++
	}
	if a.nodes[c].prev != prev {
		return 0, corrupt("class %d: head's prev %d, last node %d", c, a.nodes[c].prev, prev)
	}
	return count, nil
}

// checkClassBits checks the class bitmap's summary and its bits past the
// last class.
func (a *Arena) checkClassBits() error {
	for c := int(a.nheads); c < classSlots; c++ {
		if a.classes.word[c>>6]&(1<<(uint(c)&63)) != 0 {
			return corrupt("class %d has no head but is marked non-empty", c)
		}
	}
	for w := 0; w < classWords; w++ {
		if (a.classes.top&(1<<uint(w)) != 0) != (a.classes.word[w] != 0) {
			return corrupt("class summary bit %d disagrees with its word", w)
		}
	}
	if a.classes.top>>classWords != 0 {
		return corrupt("class summary has bits past word %d", classWords)
	}
	for w := classWords; w < classWordSlots; w++ {
		if a.classes.word[w] != 0 {
			return corrupt("class word %d past the last class is not empty", w)
		}
	}
	if a.classes.word[0]&1 != 0 {
		return corrupt("class 0 marked non-empty")
	}
	return nil
}

// checkRetired checks the retired slots — at least one, so that Free never
// has to grow the node slice — and that heads, live nodes (count of them so
// far) and retired slots account for every used slot.
func (a *Arena) checkRetired(seen []uint8, count int) error {
	if a.retired == none {
		return corrupt("no retired slot")
	}
	for h := a.retired; h != none; h = a.node(h).next {
		if !a.validNode(h) {
			return corrupt("retired handle %d is no node slot", h)
		}
		if seen[h>>handleShift]&seenRetired != 0 {
			return corrupt("node %d retired twice", h)
		}
		if seen[h>>handleShift] != 0 {
			return corrupt("node %d both retired and live", h)
		}
		if a.node(h).class != 0 {
			return corrupt("retired node %d has class %d", h, a.node(h).class)
		}
		seen[h>>handleShift] |= seenRetired
		count++
	}
	if count != int(a.fresh) {
		return corrupt("%d slots heads, live or retired out of %d used", count, a.fresh)
	}
	return nil
}

// validNode reports whether h is the handle of a used slot past the class
// heads.
func (a *Arena) validNode(h uint32) bool {
	i := h >> handleShift
	return h&(1<<handleShift-1) == 0 && i >= a.nheads && i < a.fresh
}

// checkTailBits verifies the shape and summaries of the tail bitmap.
func (a *Arena) checkTailBits() error {
	t := &a.tails
	if t.depth < 1 || t.depth > maxLevels || len(t.level[t.depth-1]) != 1 {
		return corrupt("tail bitmap depth %d or top level malformed", t.depth)
	}
	if a.capG > t.size()<<bucketShift {
		return corrupt("tail bitmap holds %d buckets, capacity %d granules", t.size(), a.capG)
	}
	for l := 1; l < t.depth; l++ {
		below, s := t.level[l-1], t.level[l]
		if int64(len(s)) != (int64(len(below))+63)>>6 {
			return corrupt("tail level %d has %d words for %d below", l, len(s), len(below))
		}
		for w, v := range below {
			if (s[w>>6]&(1<<(uint(w)&63)) != 0) != (v != 0) {
				return corrupt("tail summary level %d bit %d disagrees with its word", l, w)
			}
		}
		for w := len(below); w < len(s)<<6; w++ {
			if s[w>>6]&(1<<(uint(w)&63)) != 0 {
				return corrupt("tail summary level %d bit %d past the end", l, w)
			}
		}
	}
	return nil
}

// checkLargest checks the kept largest region: no free region is larger
// than maxG, and exactly maxN are maxG long (none when maxN is 0).
func (a *Arena) checkLargest(live []uint32) error {
	n := 0
	for _, h := range live {
		switch s := a.node(h).hi - a.node(h).lo; {
		case s > a.maxG:
			return corrupt("region of %d granules above the largest kept, %d", s, a.maxG)
		case s == a.maxG:
			n++
		}
	}
	if n != a.maxN || a.maxN < 0 {
		return corrupt("%d regions of the largest size %d, kept count %d", n, a.maxG, a.maxN)
	}
	return nil
}
