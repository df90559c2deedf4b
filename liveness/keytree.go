package liveness

import (
	"fmt"
	"math"
)

// keyTree holds the Index's keys — the distinct runs pending users cover,
// each with its group — ordered by (lo, hi), and answers "which keys
// overlap [lo, hi)" without allocating. It is a treap (a binary search
// tree whose nodes also form a heap on random priorities, so its expected
// depth is O(log n)) augmented with each subtree's largest end, the
// classic interval tree: a subtree whose largest end is at most lo holds
// no key overlapping [lo, hi), and the right subtree of a key starting at
// or after hi holds none either.
//
// Nodes live in slices addressed by int32 (0 is a sentinel meaning none);
// deleted nodes go on a free list and are reused, so once the slices have
// grown, inserts and deletes allocate nothing. What a query reads of a
// node (its key, largest end and links: 32 bytes) is kept apart from what
// only updates and reported keys need (priority and group), so that a
// query's walk down the tree touches half the memory. Costs: insert,
// delete and lookup O(log n) expected; an overlap query O(log n + k) for k
// keys reported.
//
// (github.com/rdleal/intervalst, which the tests use as the reference for
// this tree, answers the same queries, but each returns a fresh slice and
// each insert allocates a node: on the allocation-free paths of Use,
// Release and Complete that is the cost this tree avoids.)
type keyTree struct {
	nodes []keyNode
	meta  []keyMeta // meta[i] goes with nodes[i]; len(meta) == len(nodes)
	root  int32
	free  int32 // head of the free list, linked through left
	n     int   // keys in the tree
	seed  uint64
	// shape counts the changes of the tree's shape (Insert, Delete): a
	// hint is good only for the shape it was found in.
	shape uint64
	hint  searchHint
	found foundKeys
	walks uint64 // walks begun (Overlapping), to tell a nested one
}

// foundKeys remembers the keys the last query that went through reported,
// when they were few: a later query within its bounds, in the same shape,
// is answered from them without a walk (only keys overlapping the earlier
// query can overlap a narrower one). A tensor's users come and go over
// the same few keys — its writer's run and its readers' — and each
// completion asks about those bytes again: the walk, O(log n) nodes in a
// tree of n keys, is then paid once for the tensor's first lifetime.
type foundKeys struct {
	shape  uint64 // keyTree.shape+1 when complete; 0: nothing remembered
	lo, hi int64  // the query
	n      int    // keys reported; more than maxFound: not remembered
	g      [maxFound]*group
}

// maxFound is the most keys foundKeys remembers.
const maxFound = 4

// searchHint remembers where the last query's keys were: below node, a
// subtree every key outside of which ends at or before before or starts
// at or after after. A query [lo, hi) with before <= lo and hi <= after
// then starts its walk at node instead of the root, while the shape is
// the one the hint was found in (the tidwall/btree PathHint idea): a
// program that keeps using the same bytes (a tensor's buffer, allocated
// again at the same offset) finds their keys in a few steps however many
// keys lie elsewhere. node 0 says no key overlaps such a query at all.
type searchHint struct {
	node          int32
	shape         uint64 // keyTree.shape when found; 0: no hint
	before, after int64
}

// keyNode is what a query reads of a node.
type keyNode struct {
	lo, hi      int64 // the key [lo, hi)
	maxHi       int64 // the largest hi in the subtree
	left, right int32
}

// keyMeta is the rest of a node: its heap priority and its key's group.
type keyMeta struct {
	prio uint32
	g    *group
}

// Len returns the number of keys.
func (t *keyTree) Len() int { return t.n }

// less orders keys by lo, then hi.
func keyLess(alo, ahi, blo, bhi int64) bool {
	return alo < blo || (alo == blo && ahi < bhi)
}

// newNode returns a node for [lo, hi) with group g.
func (t *keyTree) newNode(lo, hi int64, g *group) int32 {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, keyNode{}) // the sentinel
		t.meta = append(t.meta, keyMeta{})
	}
	// splitmix64: cheap, good enough for treap priorities.
	t.seed += 0x9e3779b97f4a7c15
	z := t.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	nd := keyNode{lo: lo, hi: hi, maxHi: hi}
	md := keyMeta{prio: uint32(z >> 32), g: g}
	if i := t.free; i != 0 {
		t.free = t.nodes[i].left
		t.nodes[i], t.meta[i] = nd, md
		return i
	}
	t.nodes = append(t.nodes, nd)
	t.meta = append(t.meta, md)
	return int32(len(t.nodes) - 1)
}

// fix recomputes n's maxHi from its key and children.
func (t *keyTree) fix(n int32) {
	nd := &t.nodes[n]
	m := nd.hi
	if nd.left != 0 {
		m = max(m, t.nodes[nd.left].maxHi)
	}
	if nd.right != 0 {
		m = max(m, t.nodes[nd.right].maxHi)
	}
	nd.maxHi = m
}

// child returns the address of n's left link when left is true, else of
// its right link.
func (t *keyTree) child(n int32, left bool) *int32 {
	if left {
		return &t.nodes[n].left
	}
	return &t.nodes[n].right
}

// rotate lifts n's child on the given side (the left child when left is
// true) into n's place, keeping the key order, and returns it.
func (t *keyTree) rotate(n int32, left bool) int32 {
	c := *t.child(n, left)
	*t.child(n, left) = *t.child(c, !left)
	*t.child(c, !left) = n
	t.fix(n)
	t.fix(c)
	return c
}

// Insert adds the key [lo, hi) with group g. The key must not be present.
func (t *keyTree) Insert(lo, hi int64, g *group) {
	nn := t.newNode(lo, hi, g)
	t.root = t.insert(t.root, nn)
	t.n++
	t.shape++
}

func (t *keyTree) insert(n, nn int32) int32 {
	if n == 0 {
		return nn
	}
	k := &t.nodes[nn]
	left := keyLess(k.lo, k.hi, t.nodes[n].lo, t.nodes[n].hi)
	c := t.insert(*t.child(n, left), nn)
	*t.child(n, left) = c
	if t.meta[c].prio > t.meta[n].prio {
		return t.rotate(n, left)
	}
	t.fix(n)
	return n
}

// Delete removes the key [lo, hi) and reports whether it was present.
func (t *keyTree) Delete(lo, hi int64) bool {
	var found bool
	t.root, found = t.delete(t.root, lo, hi)
	if found {
		t.n--
		t.shape++
	}
	return found
}

func (t *keyTree) delete(n int32, lo, hi int64) (int32, bool) {
	if n == 0 {
		return 0, false
	}
	nd := &t.nodes[n]
	var found bool
	switch {
	case nd.lo == lo && nd.hi == hi:
		return t.removeNode(n), true
	case keyLess(lo, hi, nd.lo, nd.hi):
		var l int32
		l, found = t.delete(nd.left, lo, hi)
		t.nodes[n].left = l
	default:
		var r int32
		r, found = t.delete(nd.right, lo, hi)
		t.nodes[n].right = r
	}
	if found {
		t.fix(n)
	}
	return n, found
}

// removeNode unlinks n from the subtree it roots (merging its children by
// priority) and frees it; it returns the subtree's new root.
func (t *keyTree) removeNode(n int32) int32 {
	root := t.merge(t.nodes[n].left, t.nodes[n].right)
	t.nodes[n] = keyNode{left: t.free}
	t.meta[n] = keyMeta{}
	t.free = n
	return root
}

// merge joins two treaps, every key of a before every key of b.
func (t *keyTree) merge(a, b int32) int32 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	case t.meta[a].prio > t.meta[b].prio:
		t.nodes[a].right = t.merge(t.nodes[a].right, b)
		t.fix(a)
		return a
	default:
		t.nodes[b].left = t.merge(a, t.nodes[b].left)
		t.fix(b)
		return b
	}
}

// Overlapping calls fn with the group of every key overlapping [lo, hi),
// in key order, until fn returns false; it reports whether it went through
// (fn never returned false).
//
// The walk starts where the last query's keys were (searchHint) when the
// tree's shape has not changed since and [lo, hi) lies within the hint's
// bounds; otherwise it descends from the root to the first node whose
// subtree may hold a key overlapping [lo, hi) and on both sides of which
// no key does, and leaves the hint there.
//
// A query that went through and reported at most maxFound keys leaves
// them (foundKeys): a later query within its bounds, while the shape is
// the same, calls fn with those of them that overlap it, in the same
// order, and walks nothing. fn may query the tree again; it must not
// change its keys.
func (t *keyTree) Overlapping(lo, hi int64, fn func(g *group) bool) bool {
	if hi <= lo {
		return true
	}
	if f := &t.found; f.shape == t.shape+1 && f.lo <= lo && hi <= f.hi {
		gs, k := f.g, f.n // fn may query again and replace them
		for _, g := range gs[:k] {
			if g.hi > lo && g.lo < hi && !fn(g) {
				return false
			}
		}
		return true
	}
	n := t.hint.node
	if h := &t.hint; h.shape != t.shape+1 || lo < h.before || hi > h.after {
		n = t.split(lo, hi)
	}
	t.walks++
	walk := t.walks
	t.found = foundKeys{lo: lo, hi: hi}
	if !t.overlapping(n, lo, hi, fn) {
		return false
	}
	// Remembered only when no query ran inside fn (it would have
	// replaced what this one was collecting) and the keys were few.
	if t.walks == walk && t.found.n <= maxFound {
		t.found.shape = t.shape + 1
	}
	return true
}

// remembered returns the keys foundKeys holds when they answer the query
// [lo, hi) (some may not overlap it: the caller filters), and whether they
// do: what Overlapping would walk through, without a call per key. The
// slice is valid until the next query.
func (t *keyTree) remembered(lo, hi int64) ([]*group, bool) {
	if f := &t.found; f.shape == t.shape+1 && f.lo <= lo && hi <= f.hi {
		return f.g[:f.n], true
	}
	return nil, false
}

// report notes g, a key the walk in progress reports, for foundKeys.
func (t *keyTree) report(g *group) {
	if f := &t.found; f.shape == 0 {
		if f.n < maxFound {
			f.g[f.n] = g
		}
		f.n++
	}
}

// split descends from the root past every node that, with the subtree on
// one side, lies wholly before lo (ends at or before it) or wholly after
// hi (starts at or after it), and returns the first node it cannot pass
// (0 if none): every key overlapping [lo, hi) is below it. It records that
// node and the bounds of what it passed as the tree's hint.
func (t *keyTree) split(lo, hi int64) int32 {
	before, after := int64(math.MinInt64), int64(math.MaxInt64)
	n := t.root
	for n != 0 {
		nd := &t.nodes[n]
		if nd.lo >= hi {
			// n and its right subtree start at or after hi.
			after = nd.lo
			n = nd.left
			continue
		}
		leftMax := int64(math.MinInt64)
		if l := nd.left; l != 0 {
			leftMax = t.nodes[l].maxHi
		}
		if nd.hi > lo || leftMax > lo {
			break
		}
		// n and its left subtree end at or before lo.
		before = max(before, nd.hi, leftMax)
		n = nd.right
	}
	t.hint = searchHint{node: n, shape: t.shape + 1, before: before, after: after}
	return n
}

func (t *keyTree) overlapping(n int32, lo, hi int64, fn func(g *group) bool) bool {
	for n != 0 {
		nd := &t.nodes[n]
		if nd.maxHi <= lo {
			return true
		}
		// Descend left only where a key may reach lo: on a query above
		// most keys, the usual case, the walk is one path, no calls.
		if l := nd.left; l != 0 && t.nodes[l].maxHi > lo && !t.overlapping(l, lo, hi, fn) {
			return false
		}
		if nd.lo >= hi {
			return true // every key to the right starts at or after hi
		}
		if nd.hi > lo {
			g := t.meta[n].g
			t.report(g)
			if !fn(g) {
				return false
			}
		}
		n = nd.right
	}
	return true
}

// Each calls fn with every key's group, in key order, until fn returns
// false.
func (t *keyTree) Each(fn func(g *group) bool) {
	t.each(t.root, fn)
}

func (t *keyTree) each(n int32, fn func(g *group) bool) bool {
	for n != 0 {
		if !t.each(t.nodes[n].left, fn) || !fn(t.meta[n].g) {
			return false
		}
		n = t.nodes[n].right
	}
	return true
}

// check verifies the tree's order, heap and maxHi invariants and its key
// count.
func (t *keyTree) check() error {
	count := 0
	var prevLo, prevHi int64
	first := true
	var err error
	var walk func(n int32) int64
	walk = func(n int32) int64 {
		if n == 0 || err != nil {
			return -1 << 63
		}
		nd := &t.nodes[n]
		for _, c := range [2]int32{nd.left, nd.right} {
			if c != 0 && t.meta[c].prio > t.meta[n].prio {
				err = errKeyTree("heap order broken at key", nd.lo, nd.hi)
			}
		}
		m := max(nd.hi, walk(nd.left))
		if !first && !keyLess(prevLo, prevHi, nd.lo, nd.hi) {
			err = errKeyTree("keys out of order at", nd.lo, nd.hi)
		}
		first, prevLo, prevHi = false, nd.lo, nd.hi
		count++
		if g := t.meta[n].g; g == nil || g.lo != nd.lo || g.hi != nd.hi {
			err = errKeyTree("group does not match key", nd.lo, nd.hi)
		}
		m = max(m, walk(nd.right))
		if m != nd.maxHi && err == nil {
			err = errKeyTree("largest end out of date at key", nd.lo, nd.hi)
		}
		return m
	}
	walk(t.root)
	if err == nil && count != t.n {
		err = errKeyTree("key count wrong", int64(count), int64(t.n))
	}
	if err == nil {
		err = t.checkHint()
	}
	if err == nil {
		err = t.checkFound()
	}
	return err
}

// checkFound verifies remembered keys: exactly the keys overlapping their
// query, in key order.
func (t *keyTree) checkFound() error {
	f := &t.found
	if f.shape != t.shape+1 {
		return nil
	}
	var want []*group
	t.Each(func(g *group) bool {
		if g.hi > f.lo && g.lo < f.hi {
			want = append(want, g)
		}
		return true
	})
	if len(want) != f.n {
		return errKeyTree("remembered keys: count wrong for query", f.lo, f.hi)
	}
	for i, g := range want {
		if f.g[i] != g {
			return errKeyTree("remembered keys: wrong key for query", f.lo, f.hi)
		}
	}
	return nil
}

// checkHint verifies a current hint: every key outside the subtree of its
// node ends at or before its before bound or starts at or after its after
// bound.
func (t *keyTree) checkHint() error {
	h := t.hint
	if h.shape != t.shape+1 {
		return nil
	}
	below := make(map[int32]bool)
	var mark func(n int32)
	mark = func(n int32) {
		if n != 0 {
			below[n] = true
			mark(t.nodes[n].left)
			mark(t.nodes[n].right)
		}
	}
	mark(h.node)
	if h.node != 0 && !below[t.root] {
		// The hint's node must be in the tree: reached from the root.
		found := false
		var find func(n int32)
		find = func(n int32) {
			if n != 0 && !found {
				found = n == h.node
				find(t.nodes[n].left)
				find(t.nodes[n].right)
			}
		}
		find(t.root)
		if !found {
			return errKeyTree("hint's node not in the tree", int64(h.node), 0)
		}
	}
	var err error
	var walk func(n int32)
	walk = func(n int32) {
		if n == 0 || err != nil {
			return
		}
		nd := &t.nodes[n]
		if !below[n] && nd.hi > h.before && nd.lo < h.after {
			err = errKeyTree("key outside the hint's subtree within its bounds", nd.lo, nd.hi)
		}
		walk(nd.left)
		walk(nd.right)
	}
	walk(t.root)
	return err
}

func errKeyTree(what string, lo, hi int64) error {
	return fmt.Errorf("liveness: key tree: %s [%d, %d)", what, lo, hi)
}
