package arena

import "math/bits"

// maxLevels is the depth of a tailBits over maxGranules granules:
// 2^32 bits -> 2^26 words -> 2^20 -> 2^14 -> 2^8 -> 4 -> 1.
const maxLevels = 6

// tailBits is a hierarchical bitmap over granule indices: bit g of level 0 is
// set exactly when some free region's last granule is g (its tail), and bit w
// of level l+1 is set exactly when word w of level l is non-zero. Finding the
// first tail at or after g, the query every Free and IsAllocated makes, walks
// up until a masked word is non-zero and back down, one TrailingZeros64 per
// level: at most 2*depth words, a few dozen instructions.
//
// Invariant: words past the last allocated bit are zero, and level depth-1
// is exactly one word.
type tailBits struct {
	level [maxLevels][]uint64
	depth int
}

// reset sizes the bitmap for n granules (n >= 0) and clears every bit.
// It reuses the existing storage when that is large enough.
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

// grow makes room for n granules, keeping every set bit. It allocates new
// storage at least twice the old, so growth costs O(1) amortized per granule.
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

// has reports whether bit g is set; g must be inside the bitmap.
func (t *tailBits) has(g int64) bool {
	return t.level[0][g>>6]&(1<<(uint64(g)&63)) != 0
}

// set sets bit g, marking summary words up the hierarchy as they become
// non-empty.
func (t *tailBits) set(g int64) {
	for l := 0; l < t.depth; l++ {
		s := t.level[l]
		w := g >> 6
		old := s[w]
		s[w] = old | 1<<(uint64(g)&63)
		if old != 0 {
			return
		}
		g = w
	}
}

// clear clears bit g, clearing summary bits up the hierarchy as words
// become empty.
func (t *tailBits) clear(g int64) {
	for l := 0; l < t.depth; l++ {
		s := t.level[l]
		w := g >> 6
		v := s[w] &^ (1 << (uint64(g) & 63))
		s[w] = v
		if v != 0 {
			return
		}
		g = w
	}
}

// next returns the first set bit at or after g (g >= 0), or -1.
func (t *tailBits) next(g int64) int64 {
	l := 0
	for {
		if l == t.depth {
			return -1
		}
		s := t.level[l]
		w := g >> 6
		if w >= int64(len(s)) {
			return -1
		}
		if m := s[w] & (^uint64(0) << (uint64(g) & 63)); m != 0 {
			g = w<<6 | int64(bits.TrailingZeros64(m))
			break
		}
		g = w + 1
		l++
	}
	for l > 0 {
		l--
		g = g<<6 | int64(bits.TrailingZeros64(t.level[l][g])) // summary bit set: word non-zero
	}
	return g
}
