package arena

import (
	"math"
	"math/bits"
)

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

// classOf returns the class holding regions of n granules (0 <= n <=
// maxGranules): the largest class whose lower bound is <= n. Below
// 2^(classBits+1) granules every size is its own class. Above, for
// 2^e <= n < 2^(e+1), the class is (e-classBits)·2^classBits plus the top
// classBits+1 bits of n. Both are the exponent and the top classBits bits
// of the mantissa of float64(n), which holds n exactly, less a constant;
// that reading is right from 2^classBits granules up, and a conditional
// move picks n itself below. The conversion costs no variable shift (on
// amd64 a shift count must sit in CX, which costs register moves).
func classOf(n int64) int {
	c := int(math.Float64bits(float64(n))>>(52-classBits)) - classBias
	if n < 1<<classBits {
		c = int(n)
	}
	return c
}

// classBias maps float64 bits to a class: float64(2^e) has the biased
// exponent e+1023 and a zero mantissa, and starts class
// (e-classBits+1)·2^classBits.
const classBias = (1023 + classBits - 1) << classBits

// classUp returns the first class every region of which holds n granules
// (n >= 1): the class above that of n-1. If n starts its class, n-1 lies in
// the class below; otherwise n-1 lies in n's class, which also holds sizes
// below n.
func classUp(n int64) int { return classOf(n-1) + 1 }

// classLow returns the smallest region size, in granules, of class c.
func classLow(c int) int64 {
	if c < 1<<classBits {
		return int64(c)
	}
	e := c>>classBits + classBits - 1
	return int64(1<<classBits|c&classMask) << uint(e-classBits)
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
