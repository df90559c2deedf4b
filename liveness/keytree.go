package liveness

import "fmt"

// keyTree holds the Index's keys — the distinct runs pending users cover,
// each with its group — ordered by (lo, hi), and answers "which keys
// overlap [lo, hi)" without allocating. It is a treap (a binary search
// tree whose nodes also form a heap on random priorities, so its expected
// depth is O(log n)) augmented with each subtree's largest end, the
// classic interval tree: a subtree whose largest end is at most lo holds
// no key overlapping [lo, hi), and the right subtree of a key starting at
// or after hi holds none either.
//
// Nodes live in one slice addressed by int32 (0 is a sentinel meaning
// none); deleted nodes go on a free list and are reused, so once the slice
// has grown, inserts and deletes allocate nothing. Costs: insert, delete
// and lookup O(log n) expected; an overlap query O(log n + k) for k keys
// reported.
//
// (github.com/rdleal/intervalst, which the tests use as the reference for
// this tree, answers the same queries, but each returns a fresh slice and
// each insert allocates a node: on the allocation-free paths of Use,
// Release and Complete that is the cost this tree avoids.)
type keyTree struct {
	nodes []keyNode
	root  int32
	free  int32 // head of the free list, linked through left
	n     int   // keys in the tree
	seed  uint64
}

type keyNode struct {
	lo, hi      int64 // the key [lo, hi)
	maxHi       int64 // the largest hi in the subtree
	left, right int32
	prio        uint32
	g           *group
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
	}
	// splitmix64: cheap, good enough for treap priorities.
	t.seed += 0x9e3779b97f4a7c15
	z := t.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	nd := keyNode{lo: lo, hi: hi, maxHi: hi, prio: uint32(z >> 32), g: g}
	if i := t.free; i != 0 {
		t.free = t.nodes[i].left
		t.nodes[i] = nd
		return i
	}
	t.nodes = append(t.nodes, nd)
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
}

func (t *keyTree) insert(n, nn int32) int32 {
	if n == 0 {
		return nn
	}
	k := &t.nodes[nn]
	left := keyLess(k.lo, k.hi, t.nodes[n].lo, t.nodes[n].hi)
	c := t.insert(*t.child(n, left), nn)
	*t.child(n, left) = c
	if t.nodes[c].prio > t.nodes[n].prio {
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
	case t.nodes[a].prio > t.nodes[b].prio:
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
func (t *keyTree) Overlapping(lo, hi int64, fn func(g *group) bool) bool {
	if hi <= lo {
		return true
	}
	return t.overlapping(t.root, lo, hi, fn)
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
		if nd.hi > lo && !fn(nd.g) {
			return false
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
		if !t.each(t.nodes[n].left, fn) || !fn(t.nodes[n].g) {
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
			if c != 0 && t.nodes[c].prio > nd.prio {
				err = errKeyTree("heap order broken at key", nd.lo, nd.hi)
			}
		}
		m := max(nd.hi, walk(nd.left))
		if !first && !keyLess(prevLo, prevHi, nd.lo, nd.hi) {
			err = errKeyTree("keys out of order at", nd.lo, nd.hi)
		}
		first, prevLo, prevHi = false, nd.lo, nd.hi
		count++
		if nd.g == nil || nd.g.lo != nd.lo || nd.g.hi != nd.hi {
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
	return err
}

func errKeyTree(what string, lo, hi int64) error {
	return fmt.Errorf("liveness: key tree: %s [%d, %d)", what, lo, hi)
}
