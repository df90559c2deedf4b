package analysis

import (
	"math"
	"slices"

	"github.com/subarena/subarena/ranges"
)

// cand is one place a block of n bytes could go: at the start or the end of
// a free region (clean bytes and lent held bytes, coalesced).
type cand struct {
	off, regOff, regSize int64
	atEnd, top           bool
	growth               int64 // bytes it adds to the high-water mark
	lent                 int64 // held bytes it takes
}

// candidates lists every start-of-region place, and with bothEnds every
// end-of-region place, in address order.
func (s *shadow) candidates(n int64, lent []ranges.Range, bothEnds bool) []cand {
	hwm := s.HighWater()
	var out []cand
	over := func(lo int64) int64 {
		var t int64
		for _, r := range lent {
			if x := r.Intersect(ranges.Range{Lo: lo, Hi: lo + n}); !x.Empty() {
				t += x.Len()
			}
		}
		return t
	}
	for _, r := range s.FreeRegions() {
		if r.End() == boundedCap {
			out = append(out, cand{off: r.Offset, regOff: r.Offset, regSize: math.MaxInt64, top: true,
				growth: max(0, r.Offset+n-hwm), lent: over(r.Offset)})
			continue
		}
		if r.Size < n {
			continue
		}
		out = append(out, cand{off: r.Offset, regOff: r.Offset, regSize: r.Size, lent: over(r.Offset)})
		if bothEnds && r.Size > n {
			out = append(out, cand{off: r.End() - n, regOff: r.Offset, regSize: r.Size, atEnd: true, lent: over(r.End() - n)})
		}
	}
	return out
}

// scorePlacer picks the candidate with the least growth, then the least
// score (then the lowest address).
type scorePlacer struct {
	name     string
	bothEnds bool
	score    func(s *shadow, c *cand, n int64, h *hint) float64
}

func (p *scorePlacer) Name() string { return p.name }

func (p *scorePlacer) Place(s *shadow, n int64, lent []ranges.Range, h *hint) int64 {
	best, bs := cand{off: -1}, 0.0
	for _, c := range s.candidates(n, lent, p.bothEnds) {
		sc := p.score(s, &c, n, h)
		if best.off < 0 || c.growth < best.growth || (c.growth == best.growth && sc < bs) {
			best, bs = c, sc
		}
	}
	return best.off
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// The placers. Scores combine keys lexicographically through weights far
// apart (offsets and sizes are below 2^33 here).
const (
	wKey = 1 << 40
)

// lowAddr is the Allocator's rule in the bounded model: held bytes first, at
// the lowest region start that reaches them; else the lowest clean region
// (first fit).
func lowAddr() placer {
	return &scorePlacer{name: "low-address", score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		return b2f(c.lent == 0)*wKey*4 + float64(c.off)
	}}
}

// bestFitHeld: held bytes first, in the smallest region that reaches them;
// else the smallest clean region.
func bestFitHeld() placer {
	return &scorePlacer{name: "best-fit-held", score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		return b2f(c.lent == 0)*wKey*4 + float64(c.regSize)*2 + float64(c.off)/float64(1<<34)
	}}
}

// bestFit: the smallest region, held or clean alike.
func bestFit() placer {
	return &scorePlacer{name: "best-fit", score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		return float64(c.regSize)*2 + float64(c.off)/float64(1<<34)
	}}
}

// deathOf is the expected time buffer b's bytes come free: the end of its
// last use in the schedule (held to the end: +Inf).
func deathOf(in *Info, b int) float64 {
	if b < 0 {
		return math.Inf(1)
	}
	if in.DeathStep[b] == never {
		return math.Inf(1)
	}
	return float64(in.LastUse[b])
}

// neighborDeath is the expected death of what lies just below (atEnd:
// above) the candidate block: the wall at offset 0 never dies; the top
// (growth) counts as free.
func neighborDeath(s *shadow, in *Info, c *cand, n int64) float64 {
	if c.top {
		if c.off == 0 {
			return math.Inf(1)
		}
		return deathOf(in, s.Owner(c.off-1))
	}
	if c.atEnd {
		return deathOf(in, s.Owner(c.off+n))
	}
	if c.off == 0 {
		return math.Inf(1)
	}
	return deathOf(in, s.Owner(c.off-1))
}

// deathNeighbor uses the expected-death hint: among places at either end of
// a free region (held or clean), the one whose neighbour dies closest to
// the buffer, so that the two come free together and their hole coalesces;
// ties (and equal distance) to the smaller region.
func deathNeighbor(in *Info) placer {
	return &scorePlacer{name: "death-neighbour", bothEnds: true, score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		db, dn := deathOf(in, h.Buffer), neighborDeath(s, in, c, n)
		var dist float64
		switch {
		case math.IsInf(db, 1) && math.IsInf(dn, 1):
			dist = 0
		case math.IsInf(db, 1) || math.IsInf(dn, 1):
			dist = float64(in.Makespan) * 2
		default:
			dist = math.Abs(db - dn)
		}
		return dist*float64(1<<34) + float64(c.regSize)/float64(1<<2)
	}}
}

// twoEnded uses the hint as a class: buffers that outlive the median
// lifetime go to the highest place that fits (the end of the highest
// region), the others to the lowest (held bytes first, as lowAddr).
func twoEnded(in *Info) placer {
	var lives []int64
	for b := range in.P.Buffers {
		if !in.P.Buffers[b].External && in.FirstUse[b] >= 0 {
			lives = append(lives, in.LastUse[b]-in.FirstUse[b])
		}
	}
	med := median(lives)
	return &scorePlacer{name: "two-ended", bothEnds: true, score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		long := h.DeathStep == never || h.LastUse-h.FirstUse > med
		if long {
			if c.top {
				return wKey * 8
			}
			return -float64(c.off)
		}
		return b2f(c.lent == 0)*wKey*4 + float64(c.off)
	}}
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	return c[len(c)/2]
}

// sizeTwoEnded segregates by size: a buffer at least frac of the largest
// seen so far goes to the lowest place that fits (held bytes first, as
// lowAddr); a smaller one to the highest (the end of the highest region
// that fits), so small temporaries stay out of the holes large buffers
// leave for the next large buffer.
func sizeTwoEnded(frac float64) placer {
	var largest int64
	return &scorePlacer{name: "size-two-ended", bothEnds: true, score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		largest = max(largest, n)
		if float64(n) < frac*float64(largest) {
			if c.top {
				return wKey * 8
			}
			return -float64(c.off + n)
		}
		return b2f(c.lent == 0)*wKey*4 + float64(c.off)
	}}
}

// engineAffinity keeps the Allocator's order (held bytes first, lowest
// address) but, among places that equally reuse or equally do not, prefers
// one beside a buffer used by the same engines: bytes let go there are then
// pinned by, and fenced-safe for, the same engines, so a later writer on
// them finds its reusable bytes together.
func engineAffinity(in *Info) placer {
	return &scorePlacer{name: "engine-affinity", bothEnds: true, score: func(s *shadow, c *cand, n int64, h *hint) float64 {
		var nb int
		switch {
		case c.atEnd:
			nb = s.Owner(c.off + n)
		case c.off > 0:
			nb = s.Owner(c.off - 1)
		default:
			nb = -1
		}
		mismatch := 1.0
		if nb >= 0 && in.UserEngines[nb] == h.UserEngines {
			mismatch = 0
		}
		return b2f(c.lent == 0)*wKey*4 + mismatch*wKey + float64(c.off)
	}}
}
