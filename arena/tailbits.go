package arena

import "math/bits"

// Tail buckets. The granules are cut into buckets of 64; bucket w holds
// granules [64w, 64w+64). Every free region is chained under the bucket of
// its last granule (its tail), and the tailBits summary marks the buckets
// whose chain is non-empty. Only these two structures answer address
// queries: a chain holds at most 64 regions (one per granule) and almost
// always none or one, so a per-bucket chain walk is O(1), and the summary
// finds the next non-empty bucket in O(depth).
const bucketShift = 6

// maxLevels is the depth of a tailBits over the buckets of maxGranules
// granules: 2^26 bits -> 2^20 words -> 2^14 -> 2^8 -> 4 -> 1.
const maxLevels = 5

// tailLevelSlots rounds maxLevels up to a power of two, so that a masked
// level index needs no bounds check.
const tailLevelSlots = 8

// tailBits is a hierarchical bitmap over bucket indices: bit w of level 0 is
// set exactly when bucket w's chain is non-empty, and bit i of level l+1
// exactly when word i of level l is non-zero. Finding the first non-empty
// bucket at or after w climbs until a masked word is non-zero and descends
// with one TrailingZeros64 per level: at most 2·depth words.
//
// Invariants: level depth-1 is exactly one word; summaries agree with the
// words below them; no bit is set for a bucket without a chain.
type tailBits struct {
	level [tailLevelSlots][]uint64 // levels past depth are empty
	depth int
}

// reset sizes the bitmap for n buckets (n >= 0) and clears every bit,
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
	for l := t.depth; l < tailLevelSlots; l++ {
		t.level[l] = t.level[l][:0]
	}
}

// size returns the number of buckets the bitmap can hold.
func (t *tailBits) size() int64 { return int64(len(t.level[0])) << 6 }

// grow makes room for n buckets, keeping every set bit. New storage is at
// least twice the old, so growth costs O(1) amortized per bucket.
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

// set sets bit w and the summary bits above it that were clear: the level-0
// word (Free writes the same inline), then setAbove.
func (t *tailBits) set(w int64) {
	s0 := t.level[0]
	old := s0[w>>6]
	s0[w>>6] = old | 1<<(uint64(w)&63)
	if old == 0 {
		t.setAbove(w >> 6)
	}
}

// setAbove marks word i of level 0, which has just become non-empty, in
// the summaries.
func (t *tailBits) setAbove(i int64) {
	for l := 1; l < t.depth; l++ {
		s := t.level[l]
		j := i >> 6
		old := s[j]
		s[j] = old | 1<<(uint64(i)&63)
		if old != 0 {
			return
		}
		i = j
	}
}

// clearAbove marks word i of level 0, which has just become empty, in the
// summaries.
func (t *tailBits) clearAbove(i int64) {
	for l := 1; l < t.depth; l++ {
		s := t.level[l]
		j := i >> 6
		v := s[j] &^ (1 << (uint64(i) & 63))
		s[j] = v
		if v != 0 {
			return
		}
		i = j
	}
}

// clear clears bit w and the summary bits above it whose word empties: the
// level-0 word (Alloc and Free write the same inline), then clearAbove.
func (t *tailBits) clear(w int64) {
	s0 := t.level[0]
	v := s0[w>>6] &^ (1 << (uint64(w) & 63))
	s0[w>>6] = v
	if v == 0 {
		t.clearAbove(w >> 6)
	}
}

// next returns the first set bit at or after w (w >= 0), or -1: word w/64
// of level 0, then nextAfterWord.
func (t *tailBits) next(w int64) int64 {
	s0 := t.level[0]
	i := uint64(w) >> 6
	if i >= uint64(len(s0)) {
		return -1
	}
	if m := s0[i] >> (uint64(w) & 63); m != 0 {
		return w + int64(bits.TrailingZeros64(m))
	}
	return t.nextAfterWord(i)
}

// nextAfterWord returns the first set bit in the words of level 0 after
// word i, or -1: next without the look at word i, which the caller has
// made. The first three levels, which cover 2^18 buckets (2^24 granules,
// 4 GiB at 256-byte granules), are written out; deeper bitmaps continue in
// nextDeep.
func (t *tailBits) nextAfterWord(i uint64) int64 {
	if t.depth == 1 {
		return -1
	}
	s0, s1 := t.level[0], t.level[1]
	w1 := i + 1
	j := w1 >> 6
	if j < uint64(len(s1)) {
		if m := s1[j] >> (w1 & 63); m != 0 {
			w1 += uint64(bits.TrailingZeros64(m))
			return int64(w1<<6) | int64(bits.TrailingZeros64(s0[w1]))
		}
	}
	if t.depth == 2 {
		return -1
	}
	// Level 2: the words of level 1 after word j.
	s2 := t.level[2]
	w2 := j + 1
	k := w2 >> 6
	if k < uint64(len(s2)) {
		if m := s2[k] >> (w2 & 63); m != 0 {
			w2 += uint64(bits.TrailingZeros64(m))
			w1 = w2<<6 | uint64(bits.TrailingZeros64(s1[w2]))
			return int64(w1<<6) | int64(bits.TrailingZeros64(s0[w1]))
		}
	}
	if t.depth == 3 {
		return -1
	}
	return t.nextDeep(int64(k) + 1)
}

// nextDeep continues next from level 3: w is a bit index of level 3 (a
// word index of level 2).
func (t *tailBits) nextDeep(w int64) int64 {
	l := 3
	for {
		if l == t.depth {
			return -1
		}
		s := t.level[l&(tailLevelSlots-1)]
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
	for l--; l >= 0; l-- {
		w = w<<6 | int64(bits.TrailingZeros64(t.level[l&(tailLevelSlots-1)][w]))
	}
	return w
}
