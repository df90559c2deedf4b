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

	// classSlots and classWordSlots round the class heads and the class
	// bitmap up to powers of two, so that a masked index needs no bounds
	// check; the slots past numClasses stay empty.
	classSlots     = 1024
	classWordSlots = 16
)

// classOf returns the class holding regions of n granules (n >= 1): the
// largest class whose lower bound is <= n. With s = max(0, e-classBits),
// where 2^e <= n < 2^(e+1), it is s·2^classBits + (n >> s): below
// 2^(classBits+1) granules s is 0 and every size is its own class; above,
// n >> s lies in [2^classBits, 2^(classBits+1)) and s counts octaves. One
// bit-length, no branch.
func classOf(n int64) int {
	s := classShift(n)
	return int(s<<classBits) + int(n>>s)
}

// classShift returns max(0, e-classBits) for 2^e <= n < 2^(e+1): the number
// of low bits of n below the resolution of its class. n has them all zero
// exactly when it is the lower bound of its class.
func classShift(n int64) uint {
	return uint(bits.Len64(uint64(n)|(2<<classBits-1))) - (classBits + 1)
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
	word [classWordSlots]uint64
}

func (s *classSet) add(c int) {
	s.word[uint(c)>>6&(classWordSlots-1)] |= 1 << (uint(c) & 63)
	s.top |= 1 << (uint(c) >> 6 & 63)
}

func (s *classSet) remove(c int) {
	w := uint(c) >> 6 & (classWordSlots - 1)
	v := s.word[w] &^ (1 << (uint(c) & 63))
	s.word[w] = v
	if v == 0 {
		s.top &^= 1 << w
	}
}

// first returns the first non-empty class at or after c (0 <= c <
// classSlots), or -1.
func (s *classSet) first(c int) int {
	w := uint(c) >> 6 & (classWordSlots - 1)
	if m := s.word[w] & (^uint64(0) << (uint(c) & 63)); m != 0 {
		return int(w<<6) | bits.TrailingZeros64(m)
	}
	t := s.top & (^uint64(0) << (w + 1)) // w+1 <= 16: no shift by 64
	if t == 0 {
		return -1
	}
	w = uint(bits.TrailingZeros64(t)) & (classWordSlots - 1)
	return int(w<<6) | bits.TrailingZeros64(s.word[w])
}

// last returns the highest non-empty class, or -1.
func (s *classSet) last() int {
	if s.top == 0 {
		return -1
	}
	w := uint(63-bits.LeadingZeros64(s.top)) & (classWordSlots - 1)
	return int(w<<6) | (63 - bits.LeadingZeros64(s.word[w]))
}
