package arena

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// errCorrupt wraps every invariant violation CheckInvariants reports.
var errCorrupt = errors.New("arena: invariant violated")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errCorrupt}, args...)...)
}

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
//     classOf(its size), with consistent prev/next links, and the class
//     bitmap marks exactly the non-empty lists;
//   - every node slot is either live or on the retired list, never both,
//     and the retired list is not empty (Free takes its slot from there).
//
// It costs O(capacity/64 + nodes) and allocates; it is for tests.
func (a *Arena) CheckInvariants() error {
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
	if err := a.checkTailBits(); err != nil {
		return err
	}
	nn := len(a.nodes)
	const (
		seenChain = 1 << iota
		seenClass
		seenRetired
	)
	seen := make([]uint8, nn)

	// Tail buckets: every chained node is live, chained once, under the
	// bucket of its last granule; the bitmap marks exactly the non-empty
	// chains.
	if int64(len(a.chains)) != a.tails.size() {
		return corrupt("%d chains for %d buckets", len(a.chains), a.tails.size())
	}
	var live []int32
	for w, h := range a.chains {
		prevEnd := int64(-1)
		bit := a.tails.level[0][w>>6]&(1<<(uint(w)&63)) != 0
		if bit != (h != none) {
			return corrupt("bucket %d: bit %v, chain head %d", w, bit, h)
		}
		for k := 0; h != none; h, k = a.nodes[h].chain, k+1 {
			if h < 0 || int(h) >= nn {
				return corrupt("bucket %d: handle %d out of range", w, h)
			}
			if k >= 1<<bucketShift {
				return corrupt("bucket %d: chain longer than %d", w, 1<<bucketShift)
			}
			n := a.nodes[h]
			switch {
			case seen[h]&seenChain != 0:
				return corrupt("node %d chained twice", h)
			case n.class == none:
				return corrupt("bucket %d chains retired node %d", w, h)
			case (n.hi-1)>>bucketShift != int64(w):
				return corrupt("node %d ending at %d chained in bucket %d", h, n.hi, w)
			case n.hi <= prevEnd:
				return corrupt("bucket %d: node %d ending at %d chained after one ending at %d", w, h, n.hi, prevEnd)
			}
			prevEnd = n.hi
			seen[h] |= seenChain
			live = append(live, h)
		}
	}
	if len(live) != a.nfree {
		return corrupt("%d regions chained, count says %d", len(live), a.nfree)
	}

	// Free regions in address order: non-empty, inside the capacity,
	// disjoint and fully coalesced.
	slices.SortFunc(live, func(x, y int32) int { return cmp.Compare(a.nodes[x].lo, a.nodes[y].lo) })
	var freeG, prevHi int64 = 0, -1
	for _, h := range live {
		n := a.nodes[h]
		switch {
		case n.lo >= n.hi || n.lo < 0 || n.hi > a.capG:
			return corrupt("region [%d, %d) empty or outside [0, %d)", n.lo, n.hi, a.capG)
		case n.lo <= prevHi:
			return corrupt("region [%d, %d) overlaps or touches the region ending at %d", n.lo, n.hi, prevHi)
		}
		freeG += n.hi - n.lo
		prevHi = n.hi
	}
	if freeG+a.inUseG != a.capG {
		return corrupt("free %d + in use %d != capacity %d granules", freeG, a.inUseG, a.capG)
	}

	// Class lists.
	count := 0
	for c := 0; c < numClasses; c++ {
		h := a.heads[c]
		word := a.classes.word[c>>6]&(1<<(uint(c)&63)) != 0
		if word != (h != none) {
			return corrupt("class %d: bitmap %v, head %d", c, word, h)
		}
		prev := int32(none)
		for ; h != none; h = a.nodes[h].next {
			if h < 0 || int(h) >= nn {
				return corrupt("class %d: handle %d out of range", c, h)
			}
			n := a.nodes[h]
			switch {
			case seen[h]&seenClass != 0:
				return corrupt("node %d listed twice in the classes", h)
			case seen[h]&seenChain == 0:
				return corrupt("class %d lists node %d that is no free region", c, h)
			case n.prev != prev:
				return corrupt("node %d: prev %d, want %d", h, n.prev, prev)
			case int(n.class) != c || classOf(n.hi-n.lo) != c:
				return corrupt("node %d of %d granules in class %d, marked %d, want %d", h, n.hi-n.lo, c, n.class, classOf(n.hi-n.lo))
			}
			seen[h] |= seenClass
			prev = h
			count++
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
	for c := numClasses; c < classSlots; c++ {
		if a.heads[c] != none {
			return corrupt("class slot %d past the last class has head %d", c, a.heads[c])
		}
	}
	if count != a.nfree {
		return corrupt("%d nodes in class lists, %d free regions", count, a.nfree)
	}

	count = len(live)
	// Retired slots: at least one, so that Free never has to grow the
	// node slice.
	if a.retired == none {
		return corrupt("no retired slot")
	}
	for h := a.retired; h != none; h = a.nodes[h].next {
		if h < 0 || int(h) >= nn {
			return corrupt("retired handle %d out of range", h)
		}
		if seen[h]&seenRetired != 0 {
			return corrupt("node %d retired twice", h)
		}
		if seen[h] != 0 {
			return corrupt("node %d both retired and live", h)
		}
		if a.nodes[h].class != none {
			return corrupt("retired node %d has class %d", h, a.nodes[h].class)
		}
		seen[h] |= seenRetired
		count++
	}
	if count != nn {
		return corrupt("%d slots live or retired out of %d", count, nn)
	}
	return nil
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
