package plan

import "slices"

// Static preorders. At each search node candidates are tried by minimum
// offset; ties (and the canonical order among equal offsets) follow a
// static rank per item, from a heuristic string of keys compared in turn,
// all descending: W lifetime width, A area (bytes x time), T the largest
// section total over the item's sections, Z size. MiniMalloc's preorders
// are "WAT", "TAW" and "TWA"; the search's running time is heavy-tailed in
// the preorder, so the planner cycles through a wider portfolio.

// prepareKeys computes the static preorder keys of every item.
func (s *searcher) prepareKeys() {
	c := s.c
	s.keys = make([]preKey, c.n)
	for i := range c.n {
		k := &s.keys[i]
		if e := c.extent[i]; e[0] < e[1] {
			k.w = int64(c.times[e[1]] - c.times[e[0]])
		}
		for _, pc := range c.pieces[i] {
			k.a += pc.Bytes() * int64(pc.End-pc.Start)
		}
		k.z = c.size[i]
	}
}

// preKey holds the preorder keys of one item: W lifetime width, A area
// (bytes x time), Z size; T, the largest section total over the item's
// sections, is taken when a partition is solved.
type preKey struct{ w, a, t, z int64 }

// rankItems sets the ranks of a partition's items from the current
// heuristic, a string of keys compared in turn, all descending, ties by
// index (MiniMalloc's static preordering). items is sorted in rank order.
func (s *searcher) rankItems(items []int32) {
	c := s.c
	for _, i := range items {
		t := int64(0)
		for _, sp := range c.spans[i] {
			for k := sp.s0; k < sp.s1; k++ {
				t = max(t, s.total[k])
			}
		}
		s.keys[i].t = t
	}
	slices.SortFunc(items, s.comparePre)
	for r, i := range items {
		s.rank[i] = int32(r)
	}
}

func (s *searcher) comparePre(x, y int32) int {
	kx, ky := &s.keys[x], &s.keys[y]
	for k := 0; k < len(s.heur); k++ {
		var a, b int64
		switch s.heur[k] {
		case 'W':
			a, b = kx.w, ky.w
		case 'A':
			a, b = kx.a, ky.a
		case 'T':
			a, b = kx.t, ky.t
		case 'Z':
			a, b = kx.z, ky.z
		}
		if a != b {
			return cmp64(b, a)
		}
	}
	if s.tiebreak != nil {
		return int(s.tiebreak[x] - s.tiebreak[y])
	}
	return int(x - y)
}

// shuffleTies draws a random order among items the heuristic's keys do
// not tell apart: restarts then explore other preorders, which matters
// because the search's running time is heavy-tailed in the preorder.
func (s *searcher) shuffleTies() {
	if len(s.tieBuf) != s.c.n {
		s.tieBuf = make([]int32, s.c.n)
		for i := range s.tieBuf {
			s.tieBuf[i] = int32(i)
		}
		s.rng = 0x5EED
	}
	for i := len(s.tieBuf) - 1; i > 0; i-- {
		s.rng += 0x9E3779B97F4A7C15
		z := s.rng
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		j := int(z % uint64(i+1))
		s.tieBuf[i], s.tieBuf[j] = s.tieBuf[j], s.tieBuf[i]
	}
	s.tiebreak = s.tieBuf
}
