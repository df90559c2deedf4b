package arena

import "math/bits"

// maxLevels is the depth of a tailBits over maxGranules granules:
// 2^32 bits -> 2^26 words -> 2^20 -> 2^14 -> 2^8 -> 4 -> 1.
const maxLevels = 6

// tailBits is a hierarchical bitmap over granule indices: bit g of level 0
// is set exactly when some free region's last granule is g (its tail), and
// bit w of level l+1 is set exactly when word w of level l is non-zero.
// Finding the first tail at or after g, the query every Free and IsAllocated
// makes, looks at g's own word, then climbs until a masked word is non-zero
// and descends with one TrailingZeros64 per level: at most 2·depth words.
//
// Invariants: level depth-1 is exactly one word; no bit is set at or past
// the arena's capacity; summaries agree with the words below them.
type tailBits struct {
	level [maxLevels][]uint64
	depth int
}

// reset sizes the bitmap for n granules (n >= 0) and clears every bit,
// reusing storage that is large enough.
func (t *tailBits) reset(n int64) {
	words := max((n+63)>>6, 1)
	t.depth = 0
	for {
		s := t.level[t.depth]
		if int64(cap(s)) >= words {
			s = s[:words]
			clear(s)
		} else {
			s = make([]uint64, words)
		}
		t.level[t.depth] = s
		t.depth++
		if words == 1 {
			break
		}
		words = (words + 63) >> 6
	}
	for l := t.depth; l < maxLevels; l++ {
		t.level[l] = t.level[l][:0]
	}
}

// size returns the number of granules the bitmap can hold.
func (t *tailBits) size() int64 { return int64(len(t.level[0])) << 6 }

// grow makes room for n granules, keeping every set bit. New storage is at
// least twice the old, so growth costs O(1) amortized per granule.
func (t *tailBits) grow(n int64) {
	if n <= t.size() {
		return
	}
	old := t.level[0]
	var fresh tailBits
	fresh.reset(max(n, 2*t.size()))
	copy(fresh.level[0], old)
	for l := 1; l < fresh.depth; l++ {
		for w, v := range fresh.level[l-1] {
			if v != 0 {
				fresh.level[l][w>>6] |= 1 << (uint(w) & 63)
			}
		}
	}
	*t = fresh
}

// has reports whether bit g is set; 0 <= g < size().
func (t *tailBits) has(g int64) bool {
	return t.level[0][g>>6]&(1<<(uint64(g)&63)) != 0
}

// set sets bit g and, when its word was empty, the summary bits above.
func (t *tailBits) set(g int64) {
	s := t.level[0]
	w := g >> 6
	old := s[w]
	s[w] = old | 1<<(uint64(g)&63)
	if old == 0 {
		t.setUp(w)
	}
}

// setUp marks word w of level 0 non-empty in the summaries.
func (t *tailBits) setUp(w int64) {
	for l := 1; l < t.depth; l++ {
		s := t.level[l]
		i := w >> 6
		old := s[i]
		s[i] = old | 1<<(uint64(w)&63)
		if old != 0 {
			return
		}
		w = i
	}
}

// clear clears bit g and, when its word becomes empty, the summary bits
// above.
func (t *tailBits) clear(g int64) {
	s := t.level[0]
	w := g >> 6
	v := s[w] &^ (1 << (uint64(g) & 63))
	s[w] = v
	if v == 0 {
		t.clearUp(w)
	}
}

// clearUp marks word w of level 0 empty in the summaries.
func (t *tailBits) clearUp(w int64) {
	for l := 1; l < t.depth; l++ {
		s := t.level[l]
		i := w >> 6
		v := s[i] &^ (1 << (uint64(w) & 63))
		s[i] = v
		if v != 0 {
			return
		}
		w = i
	}
}

// next returns the first set bit at or after g (g >= 0), or -1. The two
// common cases, a tail in g's own word or under the same level-1 word, are
// answered here; the climb beyond is nextWord's.
func (t *tailBits) next(g int64) int64 {
	s0 := t.level[0]
	w := uint64(g) >> 6
	if w >= uint64(len(s0)) {
		return -1
	}
	if m := s0[w] >> (uint64(g) & 63); m != 0 {
		return g + int64(bits.TrailingZeros64(m))
	}
	w++
	if s1 := t.level[1]; w>>6 < uint64(len(s1)) {
		if m := s1[w>>6] >> (w & 63); m != 0 {
			w += uint64(bits.TrailingZeros64(m))
			return int64(w<<6) | int64(bits.TrailingZeros64(s0[w]))
		}
	}
	return t.nextWord(int64(w))
}

// nextWord returns the first set bit in level-0 words w and later, or -1.
func (t *tailBits) nextWord(w int64) int64 {
	// Climb: at level l, w is a bit index (a word index of level l-1).
	l := 1
	for {
		if l == t.depth {
			return -1
		}
		s := t.level[l]
		i := w >> 6
		if i >= int64(len(s)) {
			return -1
		}
		if m := s[i] >> (uint64(w) & 63); m != 0 {
			w += int64(bits.TrailingZeros64(m))
			break
		}
		w = i + 1
		l++
	}
	// Descend: w is a set bit of level l, so word w of level l-1 is non-zero.
	for l--; l > 0; l-- {
		w = w<<6 | int64(bits.TrailingZeros64(t.level[l][w]))
	}
	return w<<6 | int64(bits.TrailingZeros64(t.level[0][w]))
}
