package plan

import "slices"

// pairRel is one interval of relative offsets that a pair of items forbids.
type pairRel struct {
	i, j int32 // i < j
	r    rel   // forbidden x_j - x_i
}

// buildEdges finds every conflicting pair of items and the relative offsets
// it forbids, and widens cut extents over concurrent partners.
//
// all holds, per pair whose windows intersect, its forbidden intervals
// already merged (a pair of items split into many pieces forbids as many
// intervals per pair of pieces, mostly overlapping), and the concurrent
// pairs' intervals as they come; link groups and merges them again. The
// steps pass it (and the scratch they share) by value rather than in a
// struct so that what does not escape stays on the stack.
func (c *compiled) buildEdges(p *Problem) {
	all := make([]pairRel, 0, 4*c.n+len(p.Concurrent))
	byLo := c.piecesByLo(make([][]Piece, c.n))
	// byHi: an item's pieces by last byte, descending, sorted when first
	// asked for (hiDesc).
	byHi := slices.Clone(c.byHi)
	all = c.sweep(all, byLo, byHi)
	c.cutExtent = slices.Clone(c.extent)
	all = c.addConcurrent(all, p)
	c.link(all)
}

// piecesByLo sets byLo[i] to item i's pieces by their first byte: as
// normalizing gave them, as they are when already sorted, else a sorted
// copy. A pair's intervals, one piece against those of the other item,
// then come in order (or in reverse order) of their first offset.
func (c *compiled) piecesByLo(byLo [][]Piece) [][]Piece {
	for i := range c.n {
		if byLo[i] = c.byLo[i]; byLo[i] != nil {
			continue // normalizing gave them
		}
		byLo[i] = c.pieces[i]
		if !slices.IsSortedFunc(byLo[i], cmpPieceLo) {
			byLo[i] = slices.Clone(byLo[i])
			slices.SortFunc(byLo[i], cmpPieceLo)
		}
	}
	return byLo
}

// hiDesc returns item i's pieces by last byte, descending, sorting them
// into byHi[i] when first asked for.
func (c *compiled) hiDesc(byHi [][]Piece, i int) []Piece {
	if byHi[i] == nil {
		byHi[i] = slices.Clone(c.pieces[i])
		slices.SortFunc(byHi[i], func(a, b Piece) int { return cmp64(b.Hi, a.Hi) })
	}
	return byHi[i]
}

// sweep sweeps items by extent to find the pairs whose windows may
// intersect, and appends each such pair's intervals, merged, to all.
func (c *compiled) sweep(all []pairRel, byLo, byHi [][]Piece) []pairRel {
	order := make([]int, 0, c.n)
	for i := range c.n {
		if len(c.pieces[i]) > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(c.extent[a][0] - c.extent[b][0]) })
	var active []int
	// rs is scratch for one pair's intervals; its first two live on the
	// stack, as the first growth of a non-escaping append would.
	var buf [2]rel
	rs := buf[:0]
	for _, i := range order {
		keep := active[:0]
		for _, j := range active {
			if c.extent[j][1] > c.extent[i][0] {
				keep = append(keep, j)
			}
		}
		active = keep
		for _, j := range active {
			A, B := min(i, j), max(i, j)
			rs = c.pairIntervals(rs[:0], byLo, byHi, A, B)
			all = appendMerged(all, int32(A), int32(B), rs)
		}
		active = append(active, i)
	}
	return all
}

// appendMerged appends the intervals rs of pair (i, j), ascending in their
// first offset, to all, merging those that overlap.
func appendMerged(all []pairRel, i, j int32, rs []rel) []pairRel {
	first := len(all)
	for _, r := range rs {
		if m := len(all); m > first && r.lo <= all[m-1].r.hi {
			all[m-1].r.hi = max(all[m-1].r.hi, r.hi)
			continue
		}
		all = append(all, pairRel{i, j, r})
	}
	return all
}

// pairIntervals appends to rs the forbidden x_B - x_A for items A < B,
// ascending in their first offset but not merged. For pieces a of A and b
// of B that is [a.Lo - b.Hi + 1, a.Hi - b.Lo), ascending in a.Lo and in
// -b.Hi.
func (c *compiled) pairIntervals(rs []rel, byLo, byHi [][]Piece, A, B int) []rel {
	switch {
	case len(c.pieces[B]) == 1:
		b := c.pieces[B][0]
		for _, a := range byLo[A] {
			if a.Start < b.End && b.Start < a.End {
				rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
			}
		}
	case len(c.pieces[A]) == 1:
		a := c.pieces[A][0]
		for _, b := range c.hiDesc(byHi, B) {
			if a.Start < b.End && b.Start < a.End {
				rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
			}
		}
	default:
		for _, a := range byLo[A] {
			for _, b := range byLo[B] {
				if a.Start < b.End && b.Start < a.End {
					rs = append(rs, rel{a.Lo - b.Hi + 1, a.Hi - b.Lo})
				}
			}
		}
		if !slices.IsSortedFunc(rs, cmpRel) {
			slices.SortFunc(rs, cmpRel)
		}
	}
	return rs
}

// addConcurrent appends to all the interval each concurrent pair of pieces
// forbids, and widens both items' cut extents over the other's extent.
func (c *compiled) addConcurrent(all []pairRel, p *Problem) []pairRel {
	for _, pp := range p.Concurrent {
		i, j := pp.A.Item, pp.B.Item
		all = append(all, pairRel{int32(min(i, j)), int32(max(i, j)), orient(i, j, p.Items[i].Pieces[pp.A.Piece], p.Items[j].Pieces[pp.B.Piece])})
		for _, k := range [2]int{i, j} {
			o := i + j - k
			e, oe := &c.cutExtent[k], c.extent[o]
			if oe[0] < oe[1] {
				e[0], e[1] = min(e[0], oe[0]), max(e[1], oe[1])
			}
		}
	}
	return all
}

// orient returns the offsets x_max(i,j) - x_min(i,j) at which piece a of item i and
// piece b of item j share a byte.
func orient(i, j int, a, b Piece) rel {
	// Pieces a of i and b of j share a byte iff
	// x_j + b.Lo < x_i + a.Hi and x_i + a.Lo < x_j + b.Hi, that is
	// x_j - x_i in [a.Lo - b.Hi + 1, a.Hi - b.Lo).
	r := rel{a.Lo - b.Hi + 1, a.Hi - b.Lo}
	if i > j {
		r = rel{-r.hi + 1, -r.lo + 1}
	}
	return r
}

// link sorts all by pair, merges each pair's intervals and builds both
// items' edges from them.
func (c *compiled) link(all []pairRel) {
	n := c.n
	c.edges = make([][]edge, n)
	c.solidAll = true
	slices.SortFunc(all, func(a, b pairRel) int {
		if a.i != b.i {
			return int(a.i - b.i)
		}
		if a.j != b.j {
			return int(a.j - b.j)
		}
		return cmp64(a.r.lo, b.r.lo)
	})
	// Degrees first, so that every item's edges and every edge's intervals
	// are carved out of one array each.
	deg := make([]int32, n)
	pairs := 0
	for g := 0; g < len(all); g++ {
		if g == 0 || all[g].i != all[g-1].i || all[g].j != all[g-1].j {
			deg[all[g].i]++
			deg[all[g].j]++
			pairs++
		}
	}
	edges := make([]edge, 2*pairs)
	at := int32(0)
	for i := range n {
		c.edges[i] = edges[at : at : at+deg[i]]
		at += deg[i]
	}
	rels := make([]rel, 2*len(all))
	for g := 0; g < len(all); {
		i, j := all[g].i, all[g].j
		h := g
		for h < len(all) && all[h].i == i && all[h].j == j {
			h++
		}
		rs := rels[: 0 : h-g] // forbidden x_j - x_i, merged
		for _, pr := range all[g:h] {
			if m := len(rs); m > 0 && pr.r.lo <= rs[m-1].hi {
				rs[m-1].hi = max(rs[m-1].hi, pr.r.hi)
				continue
			}
			rs = append(rs, pr.r)
		}
		g = h
		neg := rels[len(rs) : 2*len(rs) : 2*len(rs)] // forbidden x_i - x_j
		rels = rels[2*len(rs):]
		for m, r := range rs {
			neg[len(rs)-1-m] = rel{-r.hi + 1, -r.lo + 1}
		}
		solid := len(rs) == 1 && rs[0] == rel{-c.size[j] + 1, c.size[i]}
		c.solidAll = c.solidAll && solid
		c.edges[j] = append(c.edges[j], edge{other: i, solid: solid, rels: rs})
		c.edges[i] = append(c.edges[i], edge{other: j, solid: solid, rels: neg})
	}
}

// cmpPieceLo orders pieces by their first byte.
func cmpPieceLo(a, b Piece) int { return cmp64(a.Lo, b.Lo) }

// cmpRel orders intervals by their first offset.
func cmpRel(a, b rel) int { return cmp64(a.lo, b.lo) }
