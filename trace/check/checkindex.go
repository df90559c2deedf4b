package check

import (
	"slices"

	"github.com/subarena/subarena/ranges"
)

// useIndex holds byte sets inserted under a class and a sequence number, and answers,
// for a query set, which inserted sets meet it with a sequence number above a threshold.
// The checker inserts the bytes each earlier use reaches (class: the op's engine,
// sequence: its seq there), then asks, for a later use, for the earlier uses its op is
// not ordered after: on engine e those with seq above what the later op has seen of e.
//
// Byte coordinates are compressed to the boundaries given at construction; every set
// inserted or queried must have all its run ends among them. Each class is a segment tree
// over the elementary segments: a set is stored at the canonical nodes of each of its
// runs, every node keeps a max-heap of its entries by sequence and the largest sequence
// stored at it or below, so a query visits O(log S) nodes per run plus the nodes holding
// what it reports. Inserting costs O(log S) nodes per run.
type useIndex struct {
	coords []int64
	leaves int // a power of two >= the number of elementary segments
	trees  []*seqTree
}

type seqTree struct {
	sub   []uint64 // per node: the largest seq stored at the node or below, 0 for none
	heap  []int32  // per node: 1 + its heap's index in heaps, 0 for none
	heaps [][]indexEntry
}

type indexEntry struct {
	seq uint64
	id  int32
}

// newUseIndex returns an index over the boundaries in coords (sorted, distinct) with the
// given number of classes.
func newUseIndex(coords []int64, classes int) *useIndex {
	n := 1
	for n < len(coords)-1 {
		n <<= 1
	}
	return &useIndex{coords: coords, leaves: n, trees: make([]*seqTree, classes)}
}

// compactCoords sorts xs and drops duplicates, in place.
func compactCoords(xs []int64) []int64 {
	slices.Sort(xs)
	return slices.Compact(xs)
}

func (ix *useIndex) leaf(x int64) int {
	i, _ := slices.BinarySearch(ix.coords, x)
	return i
}

func (ix *useIndex) tree(class int) *seqTree {
	t := ix.trees[class]
	if t == nil {
		t = &seqTree{sub: make([]uint64, 2*ix.leaves), heap: make([]int32, 2*ix.leaves)}
		ix.trees[class] = t
	}
	return t
}

// insert stores set under class with sequence seq (> 0) and identity id.
func (ix *useIndex) insert(class int, seq uint64, id int32, set *ranges.Set) {
	t := ix.tree(class)
	for _, r := range set.Runs() {
		l0, r0 := ix.leaf(r.Lo)+ix.leaves, ix.leaf(r.Hi)+ix.leaves
		for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
			if l&1 == 1 {
				t.push(l, indexEntry{seq, id})
				l++
			}
			if h&1 == 1 {
				h--
				t.push(h, indexEntry{seq, id})
			}
		}
		// Every ancestor of a node just written contains a boundary leaf of the run.
		t.fixUp(l0 >> 1)
		t.fixUp((r0 - 1) >> 1)
	}
}

// entries returns node v's heap (nil for none).
func (t *seqTree) entries(v int) []indexEntry {
	if t.heap[v] == 0 {
		return nil
	}
	return t.heaps[t.heap[v]-1]
}

func (t *seqTree) push(v int, e indexEntry) {
	if t.heap[v] == 0 {
		t.heaps = append(t.heaps, nil)
		t.heap[v] = int32(len(t.heaps))
	}
	hp := &t.heaps[t.heap[v]-1]
	h := append(*hp, e)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].seq >= h[i].seq {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	*hp = h
	t.sub[v] = max(t.sub[v], e.seq)
}

func (t *seqTree) fixUp(v int) {
	for ; v >= 1; v >>= 1 {
		s := max(t.sub[2*v], t.sub[2*v+1])
		if h := t.entries(v); len(h) > 0 {
			s = max(s, h[0].seq)
		}
		t.sub[v] = s
	}
}

// query calls visit with the identity of every entry of class whose seq exceeds above
// and whose set meets set; an entry may be visited more than once.
func (ix *useIndex) query(class int, above uint64, set *ranges.Set, visit func(id int32)) {
	t := ix.trees[class]
	if t == nil || t.sub[1] <= above {
		return
	}
	for _, r := range set.Runs() {
		l0, r0 := ix.leaf(r.Lo)+ix.leaves, ix.leaf(r.Hi)+ix.leaves
		// Nodes meeting the run but not inside it contain one of its boundary leaves.
		for _, b := range [2]int{l0, r0 - 1} {
			for v := b >> 1; v >= 1; v >>= 1 {
				t.report(v, above, visit)
			}
		}
		for l, h := l0, r0; l < h; l, h = l>>1, h>>1 {
			if l&1 == 1 {
				t.below(l, above, visit)
				l++
			}
			if h&1 == 1 {
				h--
				t.below(h, above, visit)
			}
		}
	}
}

// report visits the entries stored at node v with seq above the threshold.
func (t *seqTree) report(v int, above uint64, visit func(id int32)) {
	walkHeap(t.entries(v), 0, above, visit)
}

func walkHeap(h []indexEntry, i int, above uint64, visit func(id int32)) {
	if i >= len(h) || h[i].seq <= above {
		return
	}
	visit(h[i].id)
	walkHeap(h, 2*i+1, above, visit)
	walkHeap(h, 2*i+2, above, visit)
}

// below visits the entries stored in v's subtree with seq above the threshold.
func (t *seqTree) below(v int, above uint64, visit func(id int32)) {
	if t.sub[v] <= above {
		return
	}
	t.report(v, above, visit)
	if 2*v < len(t.sub) {
		t.below(2*v, above, visit)
		t.below(2*v+1, above, visit)
	}
}
