package arena

import (
	"errors"
	"fmt"
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
//   - the free regions, read from the tail bitmap in address order, are
//     non-empty, inside [0, Capacity), sorted, disjoint and fully coalesced
//     (no two touch), so in-use + free = capacity;
//   - every tail bit names exactly one live node through its chain, every
//     summary bit is set exactly when the word below is non-zero, and no
//     bit lies at or beyond the capacity;
//   - every live node is in exactly one class list, the list of
//     classOf(its size), with consistent prev/next links, and the class
//     bitmap marks exactly the non-empty lists;
//   - every node slot is either live or on the retired list, never both.
//
// It costs O(capacity/64 + nodes) and allocates; it is for tests.
func (a *Arena) CheckInvariants() error {
	if a.capG < 0 || a.capG > maxGranules {
		return corrupt("capacity %d granules outside [0, %d]", a.capG, int64(maxGranules))
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
		seenAddr = 1 << iota
		seenClass
		seenChain
		seenRetired
	)
	seen := make([]uint8, nn)

	// Free regions in address order.
	var freeG, prevHi int64 = 0, -1
	count := 0
	for g := int64(0); ; {
		t := a.tails.next(g)
		if t < 0 {
			break
		}
		h := a.findChain(t)
		if h == none {
			return corrupt("tail bit %d names no node", t)
		}
		n := a.nodes[h]
		switch {
		case seen[h]&seenAddr != 0:
			return corrupt("node %d reached twice in address order", h)
		case n.class == none:
			return corrupt("tail %d names retired node %d", t, h)
		case n.lo >= n.hi || n.lo < 0 || n.hi > a.capG:
			return corrupt("region [%d, %d) empty or outside [0, %d)", n.lo, n.hi, a.capG)
		case n.lo <= prevHi:
			return corrupt("region [%d, %d) overlaps or touches the region ending at %d", n.lo, n.hi, prevHi)
		}
		seen[h] |= seenAddr
		freeG += n.hi - n.lo
		prevHi = n.hi
		count++
		g = t + 1
	}
	if count != a.nfree {
		return corrupt("%d regions in address order, count says %d", count, a.nfree)
	}
	if freeG+a.inUseG != a.capG {
		return corrupt("free %d + in use %d != capacity %d granules", freeG, a.inUseG, a.capG)
	}

	// Class lists.
	count = 0
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
			case seen[h]&seenAddr == 0:
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
	if count != a.nfree {
		return corrupt("%d nodes in class lists, %d free regions", count, a.nfree)
	}

	// Tail chains.
	if len(a.chains) != len(a.tails.level[0]) {
		return corrupt("%d chains for %d tail words", len(a.chains), len(a.tails.level[0]))
	}
	count = 0
	for w, h := range a.chains {
		for ; h != none; h = a.nodes[h].chain {
			if h < 0 || int(h) >= nn {
				return corrupt("chain %d: handle %d out of range", w, h)
			}
			n := a.nodes[h]
			switch {
			case seen[h]&seenChain != 0:
				return corrupt("node %d chained twice", h)
			case seen[h]&seenAddr == 0:
				return corrupt("chain %d holds node %d that is no free region", w, h)
			case (n.hi-1)>>6 != int64(w):
				return corrupt("node %d ending at %d chained in word %d", h, n.hi, w)
			}
			seen[h] |= seenChain
			count++
		}
	}
	if count != a.nfree {
		return corrupt("%d nodes chained, %d free regions", count, a.nfree)
	}

	// Retired slots.
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

// findChain returns the node chained under tail g, or none. Unlike
// tailNode it survives a corrupt chain.
func (a *Arena) findChain(g int64) int32 {
	if g>>6 >= int64(len(a.chains)) {
		return none
	}
	for h, k := a.chains[g>>6], 0; h != none && k <= len(a.nodes); h, k = a.nodes[h].chain, k+1 {
		if h < 0 || int(h) >= len(a.nodes) {
			return none
		}
		if a.nodes[h].hi-1 == g {
			return h
		}
	}
	return none
}

// checkTailBits verifies the shape and summaries of the tail bitmap.
func (a *Arena) checkTailBits() error {
	t := &a.tails
	if t.depth < 1 || t.depth > maxLevels || len(t.level[t.depth-1]) != 1 {
		return corrupt("tail bitmap depth %d or top level malformed", t.depth)
	}
	if a.capG > t.size() {
		return corrupt("tail bitmap holds %d granules, capacity %d", t.size(), a.capG)
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
	if a.capG < t.size() {
		if t.next(max(a.capG, 0)) >= 0 {
			return corrupt("tail bit at or past capacity %d", a.capG)
		}
	}
	return nil
}
