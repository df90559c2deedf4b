package arena

import "math/bits"

// Size classes. A free region of n granules lives in class classOf(n). The
// classes are a small floating-point encoding of n: sizes below 2^classBits
// granules get one exact class each; above, each octave [2^e, 2^(e+1)) is
// cut into 2^classBits classes of equal width 2^(e-classBits). So a class
// spans at most 1/2^classBits of its lower bound, and the worst case waste of
// rounding a request up to the next class is the same fraction.
//
// classBits = 5 (32 classes per octave, like VMA's TLSF) was chosen by
// measurement on the churn workloads; see doc.go.
const (
	classBits  = 5
	classMask  = 1<<classBits - 1
	maxExp     = 32 // bits.Len64(maxGranules) - 1
	numClasses = (maxExp - classBits + 2) << classBits
	classWords = (numClasses + 63) / 64
)

// classOf returns the class holding regions of n granules (n >= 1): the
// largest class whose lower bound is <= n.
func classOf(n int64) int {
	if n < 1<<classBits {
		return int(n)
	}
	e := bits.Len64(uint64(n)) - 1
	return (e-classBits+1)<<classBits | int(n>>uint(e-classBits))&classMask
}

// classLow returns the smallest region size, in granules, of class c.
func classLow(c int) int64 {
	if c < 1<<classBits {
		return int64(c)
	}
	e := c>>classBits + classBits - 1
	return int64(1<<classBits|c&classMask) << uint(e-classBits)
}

// classUp returns the first class every region of which holds n granules.
func classUp(n int64) int {
	c := classOf(n)
	if classLow(c) != n {
		c++
	}
	return c
}

// classSet is the two-level bitmap of non-empty classes: bit c of word[c/64]
// is set exactly when class c's list is non-empty, and bit w of top exactly
// when word[w] is non-zero.
type classSet struct {
	top  uint64
	word [classWords]uint64
}

func (s *classSet) add(c int) {
	s.word[c>>6] |= 1 << (uint(c) & 63)
	s.top |= 1 << (uint(c) >> 6)
}

func (s *classSet) remove(c int) {
	w := c >> 6
	v := s.word[w] &^ (1 << (uint(c) & 63))
	s.word[w] = v
	if v == 0 {
		s.top &^= 1 << uint(w)
	}
}

// first returns the first non-empty class at or after c, or -1.
func (s *classSet) first(c int) int {
	w := c >> 6
	if w < classWords {
		if m := s.word[w] & (^uint64(0) << (uint(c) & 63)); m != 0 {
			return w<<6 | bits.TrailingZeros64(m)
		}
	}
	t := s.top & (^uint64(0) << (uint(w) + 1)) // a shift by 64 yields 0
	if t == 0 {
		return -1
	}
	w = bits.TrailingZeros64(t)
	return w<<6 | bits.TrailingZeros64(s.word[w])
}

// last returns the highest non-empty class, or -1.
func (s *classSet) last() int {
	if s.top == 0 {
		return -1
	}
	w := 63 - bits.LeadingZeros64(s.top)
	return w<<6 | (63 - bits.LeadingZeros64(s.word[w]))
}
