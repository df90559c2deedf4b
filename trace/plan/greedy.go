package plan

import (
	"fmt"
	"math"
	"slices"
)

// Greedy placement: items are taken in one fixed order and each is put at a
// feasible offset given the items already placed, never moved again. The
// variants differ in the order and in the rule that picks among feasible
// offsets; the planner runs them all and keeps the lowest. They give a
// placement within microseconds, which the search then improves.

// greedyOrder names an order in which greedy placement takes items.
type greedyOrder uint8

const (
	bySize     greedyOrder = iota // largest first (TFLite, XLA "spatial")
	byArea                        // largest bytes x time first
	byLifetime                    // longest-lived first (XLA "temporal")
	byConflict                    // most conflicting bytes first
	byTotal                       // busiest section first (MiniMalloc's T)
	byStart                       // earliest first (what an online allocator sees)
	numGreedyOrders
)

var greedyOrderNames = [numGreedyOrders]string{"size", "area", "lifetime", "conflict", "total", "start"}

// fitRule picks among an item's feasible offsets.
type fitRule uint8

const (
	firstFit fitRule = iota // the lowest feasible offset
	bestFit                 // the lowest offset of the tightest feasible gap
	numFitRules
)

var fitRuleNames = [numFitRules]string{"first-fit", "best-fit"}

// greedy holds reusable scratch space for greedy runs over one problem.
type greedy struct {
	c       *compiled
	keys    [numGreedyOrders][]int32 // item orders, sorted on first use
	cmps    [numGreedyOrders]func(a, b int32) int
	offsets []int64
	placed  []bool
	forb    []rel // scratch: absolute forbidden intervals
}

func newGreedy(c *compiled) *greedy {
	g := &greedy{c: c, offsets: make([]int64, c.n), placed: make([]bool, c.n)}
	n := c.n
	size := c.size
	metrics := make([]int64, 5*n+c.nsec)
	life := metrics[0:n:n]
	area := metrics[n : 2*n : 2*n]
	start := metrics[2*n : 3*n : 3*n]
	conflict := metrics[3*n : 4*n : 4*n]
	total := metrics[4*n : 5*n : 5*n]
	secTotal := metrics[5*n:]
	for i := range n {
		for _, s := range c.spans[i] {
			for k := s.s0; k < s.s1; k++ {
				secTotal[k] += s.bytes
			}
		}
	}
	for i := range n {
		if e := c.extent[i]; e[0] < e[1] {
			life[i] = int64(c.times[e[1]] - c.times[e[0]])
			start[i] = int64(c.times[e[0]])
		}
		for _, pc := range c.pieces[i] {
			area[i] += pc.Bytes() * int64(pc.End-pc.Start)
		}
		for _, e := range c.edges[i] {
			conflict[i] += size[e.other]
		}
		for _, s := range c.spans[i] {
			for k := s.s0; k < s.s1; k++ {
				total[i] = max(total[i], secTotal[k])
			}
		}
	}
	desc := func(primary, secondary []int64) func(a, b int32) int {
		return func(a, b int32) int {
			if primary[a] != primary[b] {
				return cmp64(primary[b], primary[a])
			}
			if secondary[a] != secondary[b] {
				return cmp64(secondary[b], secondary[a])
			}
			return int(a - b)
		}
	}
	g.cmps = [numGreedyOrders]func(a, b int32) int{
		bySize:     desc(size, life),
		byArea:     desc(area, size),
		byLifetime: desc(life, size),
		byConflict: desc(conflict, size),
		byTotal:    desc(total, size),
		byStart: func(a, b int32) int {
			if start[a] != start[b] {
				return cmp64(start[a], start[b])
			}
			return desc(size, life)(a, b)
		},
	}
	return g
}

// order returns the items in greedy order o.
func (g *greedy) order(o greedyOrder) []int32 {
	if g.keys[o] == nil {
		k := make([]int32, g.c.n)
		for i := range k {
			k[i] = int32(i)
		}
		slices.SortFunc(k, g.cmps[o])
		g.keys[o] = k
	}
	return g.keys[o]
}

// run places every item in the given order with the given rule and returns
// the height; the offsets are left in g.offsets.
func (g *greedy) run(order greedyOrder, rule fitRule) int64 {
	return g.runItems(g.order(order), rule)
}

// runItems is run with the items in the order given.
func (g *greedy) runItems(items []int32, rule fitRule) int64 {
	c := g.c
	clear(g.placed)
	var height int64
	for _, i := range items {
		off := g.place(i, rule)
		g.offsets[i] = off
		g.placed[i] = true
		height = max(height, off+c.size[i])
	}
	return height
}

// place returns the offset rule picks for item i given the placed items.
func (g *greedy) place(i int32, rule fitRule) int64 {
	c := g.c
	a := c.align
	forb := g.forb[:0]
	for _, e := range c.edges[i] {
		if !g.placed[e.other] {
			continue
		}
		b := g.offsets[e.other]
		for _, r := range e.rels {
			forb = append(forb, rel{b + r.lo, b + r.hi})
		}
	}
	g.forb = forb
	if len(forb) == 0 {
		return 0
	}
	slices.SortFunc(forb, func(x, y rel) int { return cmp64(x.lo, y.lo) })
	// Walk the feasible ranges [from, to) between forbidden intervals.
	bestOff, bestLen := int64(-1), int64(math.MaxInt64)
	from := int64(0)
	for _, f := range forb {
		if f.lo > from {
			x := alignUp(from, a)
			if x < f.lo {
				if rule == firstFit {
					return x
				}
				if l := f.lo - x; l < bestLen {
					bestOff, bestLen = x, l
				}
			}
		}
		from = max(from, f.hi)
	}
	if bestOff >= 0 {
		return bestOff
	}
	return alignUp(from, a)
}

// CheckInvariants verifies the last run: every item placed at a
// non-negative aligned offset, and no two conflicting items sharing a
// forbidden relative offset.
func (g *greedy) CheckInvariants() error {
	c := g.c
	for i := range c.n {
		if !g.placed[i] {
			return fmt.Errorf("item %d not placed: %w", i, ErrConflict)
		}
		off := g.offsets[i]
		if off < 0 || off%c.align != 0 {
			return fmt.Errorf("item %d at %d: negative or unaligned: %w", i, off, ErrConflict)
		}
		for _, e := range c.edges[i] {
			if forbidden(e.rels, off-g.offsets[e.other]) {
				return fmt.Errorf("items %d at %d and %d at %d conflict: %w", i, off, e.other, g.offsets[e.other], ErrConflict)
			}
		}
	}
	return nil
}

// best runs every greedy variant and returns the lowest placement found,
// its height, and the name of the variant that produced it.
func (g *greedy) best() ([]int64, int64, string) { return g.bestUntil(-1) }

// bestUntil is best, stopping at the first variant whose height is at most
// floor (a lower bound: nothing beats it).
func (g *greedy) bestUntil(floor int64) ([]int64, int64, string) {
	if g.c.n == 0 {
		return []int64{}, 0, "empty"
	}
	bestOff := make([]int64, g.c.n)
	bestH := int64(math.MaxInt64)
	bo, br := greedyOrder(0), fitRule(0)
	for o := range numGreedyOrders {
		for r := range numFitRules {
			h := g.run(o, r)
			if h < bestH {
				bestH, bo, br = h, o, r
				copy(bestOff, g.offsets)
			}
			if bestH <= floor {
				return bestOff, bestH, variantNames[bo][br]
			}
		}
	}
	name := variantNames[bo][br]
	if items := g.unalignedLast(bo); items != nil {
		if h := g.runItems(items, br); h < bestH {
			bestH, name = h, name+", unaligned sizes last"
			copy(bestOff, g.offsets)
		}
	}
	return bestOff, bestH, name
}

// unalignedLast returns order o with the items whose size is not a
// multiple of the alignment moved to the end, or nil if there are none.
// Early in the order such an item pads whatever is stacked above it up to
// the alignment (a 4-byte input under 32-byte-aligned tensors costs 28
// bytes at the peak); placed last it takes a gap or the top, where its
// end needs no padding. bestUntil retries the best variant so when it
// missed its floor.
func (g *greedy) unalignedLast(o greedyOrder) []int32 {
	c := g.c
	if c.align == 1 {
		return nil
	}
	var items, last []int32
	for _, i := range g.order(o) {
		if c.size[i]%c.align != 0 {
			last = append(last, i)
		} else {
			items = append(items, i)
		}
	}
	if len(last) == 0 {
		return nil
	}
	return append(items, last...)
}

// variantNames names each greedy variant, "greedy ORDER FIT".
var variantNames = func() (out [numGreedyOrders][numFitRules]string) {
	for o := range numGreedyOrders {
		for r := range numFitRules {
			out[o][r] = "greedy " + greedyOrderNames[o] + " " + fitRuleNames[r]
		}
	}
	return out
}()
