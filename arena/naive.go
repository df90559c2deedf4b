package arena

import (
	"errors"
	"sort"
)

// Arena manages the free space of [0, Capacity).
type Arena struct {
	shift     uint
	fit       Fit
	unbounded bool
	initCap   int64
	backing   []byte

	capG, inUseG, peakG, highG int64
	regs                       [][2]int64
}

func (a *Arena) init() {
	a.capG = a.initCap
	a.inUseG, a.peakG, a.highG = 0, 0, 0
	a.regs = a.regs[:0]
	if a.capG > 0 {
		a.regs = append(a.regs, [2]int64{0, a.capG})
	}
}

func (a *Arena) freeRegions() int { return len(a.regs) }

func (a *Arena) largestFreeG() int64 {
	var m int64
	for _, r := range a.regs {
		m = max(m, r[1]-r[0])
	}
	return m
}

func (a *Arena) eachFree(f func(lo, hi int64)) {
	for _, r := range a.regs {
		f(r[0], r[1])
	}
}

func (a *Arena) allocated(lo, hi int64) bool {
	for _, r := range a.regs {
		if r[0] < hi && lo < r[1] {
			return false
		}
	}
	return true
}

func (a *Arena) alloc(n int64) (int64, bool) {
	for i, r := range a.regs {
		if r[1]-r[0] >= n {
			if r[1]-r[0] == n {
				a.regs = append(a.regs[:i], a.regs[i+1:]...)
			} else {
				a.regs[i][0] += n
			}
			return r[0], true
		}
	}
	return 0, false
}

func (a *Arena) grow(n int64) (int64, bool) {
	lo := a.capG
	if k := len(a.regs); k > 0 && a.regs[k-1][1] == a.capG {
		lo = a.regs[k-1][0]
		a.regs = a.regs[:k-1]
	}
	if lo+n > maxGranules {
		return 0, false
	}
	a.capG = lo + n
	return lo, true
}

func (a *Arena) free(lo, hi int64) bool {
	if !a.allocated(lo, hi) {
		return false
	}
	i := sort.Search(len(a.regs), func(i int) bool { return a.regs[i][0] >= hi })
	a.regs = append(a.regs, [2]int64{})
	copy(a.regs[i+1:], a.regs[i:])
	a.regs[i] = [2]int64{lo, hi}
	if i+1 < len(a.regs) && a.regs[i+1][0] == hi {
		a.regs[i][1] = a.regs[i+1][1]
		a.regs = append(a.regs[:i+1], a.regs[i+2:]...)
	}
	if i > 0 && a.regs[i-1][1] == lo {
		a.regs[i-1][1] = a.regs[i][1]
		a.regs = append(a.regs[:i], a.regs[i+1:]...)
	}
	return true
}

// CheckInvariants reports the first violated invariant of the free-space
// index, or nil.
func (a *Arena) CheckInvariants() error {
	var sum int64
	for i, r := range a.regs {
		if r[0] >= r[1] || r[1] > a.capG || (i > 0 && a.regs[i-1][1] >= r[0]) {
			return errors.New("arena: bad region")
		}
		sum += r[1] - r[0]
	}
	if sum+a.inUseG != a.capG {
		return errors.New("arena: accounting")
	}
	return nil
}
