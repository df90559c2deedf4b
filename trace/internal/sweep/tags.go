package sweep

// Tags folds values over ranges of n slots with a commutative, associative and
// idempotent merge (min, max, argmax with a fixed tie rule), and then reads each slot's
// fold: O(log n) per range, O(n) to read every slot.
type Tags[T any] struct {
	size  int
	tag   []T
	has   []bool
	merge func(a, b T) T
}

// NewTags returns Tags over n slots that folds with merge.
func NewTags[T any](n int, merge func(a, b T) T) *Tags[T] {
	size := 1
	for size < n {
		size <<= 1
	}
	return &Tags[T]{size: size, tag: make([]T, 2*size), has: make([]bool, 2*size), merge: merge}
}

func (t *Tags[T]) put(v int, x T) {
	if t.has[v] {
		t.tag[v] = t.merge(t.tag[v], x)
	} else {
		t.tag[v], t.has[v] = x, true
	}
}

// Fold merges x into slots [lo, hi).
func (t *Tags[T]) Fold(lo, hi int, x T) {
	for l, h := lo+t.size, hi+t.size; l < h; l, h = l>>1, h>>1 {
		if l&1 == 1 {
			t.put(l, x)
			l++
		}
		if h&1 == 1 {
			h--
			t.put(h, x)
		}
	}
}

// Slots returns the fold of every slot below n and whether anything was folded into it.
func (t *Tags[T]) Slots(n int) ([]T, []bool) {
	for v := 1; v < t.size; v++ {
		if t.has[v] {
			t.put(2*v, t.tag[v])
			t.put(2*v+1, t.tag[v])
		}
	}
	return t.tag[t.size : t.size+n], t.has[t.size : t.size+n]
}
