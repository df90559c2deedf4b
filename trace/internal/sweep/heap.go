package sweep

// Heap is a binary min-heap. Make one with NewHeap; the zero value has no
// order and must not be used.
type Heap[T any] struct {
	h    []T
	less func(a, b T) bool
}

// NewHeap returns an empty heap ordered by less.
func NewHeap[T any](less func(a, b T) bool) Heap[T] {
	return Heap[T]{less: less}
}

// Len returns the number of elements.
func (q *Heap[T]) Len() int { return len(q.h) }

// Min returns the least element without removing it. The heap must not be
// empty.
func (q *Heap[T]) Min() T { return q.h[0] }

// Push adds x.
func (q *Heap[T]) Push(x T) {
	q.h = append(q.h, x)
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(q.h[i], q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// Pop removes and returns the least element. The heap must not be empty.
func (q *Heap[T]) Pop() T {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.less(q.h[l], q.h[m]) {
			m = l
		}
		if r < len(q.h) && q.less(q.h[r], q.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}

// VisitWhile calls visit for every element x with in(x), without removing
// any, in no particular order. in must be closed toward the least element:
// when in(x) holds, it holds for every element not ordered after x. The walk
// stops at each element for which in is false and never looks at what lies
// below it in the heap, so it costs O(1 + visited).
func (q *Heap[T]) VisitWhile(in func(T) bool, visit func(T)) {
	q.visitFrom(0, in, visit)
}

// visitFrom is VisitWhile over the subtree rooted at index i.
func (q *Heap[T]) visitFrom(i int, in func(T) bool, visit func(T)) {
	for i < len(q.h) && in(q.h[i]) {
		visit(q.h[i])
		q.visitFrom(2*i+1, in, visit)
		i = 2*i + 2
	}
}
