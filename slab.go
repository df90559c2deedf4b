package subarena

// firstSlab and slabSize are the number of things the first slab and, at
// most, any later slab hold.
const (
	firstSlab = 2
	slabSize  = 32
)

// nextSlabLen returns the length of the next slab once made slabs have
// been, and counts it.
func nextSlabLen(made *int) int {
	n := slabSize
	if *made < 4 {
		n = firstSlab << *made
	}
	*made++
	return n
}

// slab carves values of type T from arrays: one heap allocation per array
// instead of one per value. The first array holds firstSlab units and each
// next one twice its predecessor's, up to slabSize, so that an Allocator
// that makes few buffers pays for few. The zero value is ready to use; the
// caller serializes access.
type slab[T any] struct {
	arr  []T // the current array
	used int // values of arr handed out: a count, so that taking one stores no pointer
	made int // arrays made so far
	// full, when not 0, is how many values a full-size array (slabSize
	// units) holds instead: as many as fit the heap's size class, so that
	// no slab pays for room it cannot use (see viewsPerSlab).
	full int
}

// take returns n consecutive values, from an array of per·nextSlabLen
// values (or full) when n ≤ per, else of their own.
func (s *slab[T]) take(n, per int) []T {
	if n > per || len(s.arr)-s.used < n {
		return s.takeNew(n, per)
	}
	out := s.arr[s.used : s.used+n : s.used+n]
	s.used += n
	return out
}

// takeNew is take when the current array has no room for n values: apart
// from take, so that take is inlined.
//
//go:noinline
func (s *slab[T]) takeNew(n, per int) []T {
	if n > per {
		return make([]T, n)
	}
	m := per * nextSlabLen(&s.made)
	if m == per*slabSize && s.full > 0 {
		m = s.full
	}
	s.arr, s.used = make([]T, max(n, m)), n
	return s.arr[:n:n]
}

// viewsPerSlab and buffersPerSlab are how many Views (88 bytes) and
// Buffers (208 bytes) a full-size slab holds: the heap puts an 8-byte
// header before an array of pointerful values bigger than 512 bytes and
// rounds it up to a size class, so that 32 Views (2,816 bytes and the
// header) take 3 KiB, which holds 34, and 32 Buffers take 6,784 bytes
// where 8 KiB holds 39 (TestSlabFill).
const (
	viewsPerSlab   = 34
	buffersPerSlab = 39
)

// next returns one zero value.
func (s *slab[T]) next() *T { return &s.take(1, 1)[0] }

// dimsPerView is the room a slab of dims keeps per view: shape and
// strides of up to four dimensions.
const dimsPerView = 8

// newBuffer returns a zero Buffer of a. Caller holds mu.
func (a *Allocator) newBuffer() *Buffer {
	var b *Buffer
	if s := &a.bufs; s.used < len(s.arr) {
		// take, by hand: the compiler does not inline a generic method
		// into its callers.
		b = &s.arr[s.used]
		s.used++
	} else {
		b = &s.takeNew(1, 1)[0]
	}
	b.a = a
	return b
}

// newResidual returns a zero residual for a buffer. Caller holds mu.
func (a *Allocator) newResidual() *residual { return a.residuals.next() }

// newView returns a zero View and, when dims > 0, dims int64s for its
// shape and strides, under one lock.
func (a *Allocator) newView(dims int) (*View, []int64) {
	a.slabMu.Lock()
	// take, by hand (see newBuffer).
	var d []int64
	if s := &a.dims; dims > 0 && dims <= dimsPerView && len(s.arr)-s.used >= dims {
		d = s.arr[s.used : s.used+dims : s.used+dims]
		s.used += dims
	} else if dims > 0 {
		d = s.takeNew(dims, dimsPerView)
	}
	var v *View
	if s := &a.views; s.used < len(s.arr) {
		v = &s.arr[s.used]
		s.used++
	} else {
		v = &s.takeNew(1, 1)[0]
	}
	a.slabMu.Unlock()
	return v, d
}
