package subarena

import (
	"testing"
	"unsafe"

	"github.com/subarena/subarena/internal/invariants"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// TestSlabLengths pins the growth of handle slabs: small first (an
// Allocator that makes a handful of buffers pays for a handful), doubling
// up to slabSize.
func TestSlabLengths(t *testing.T) {
	var made int
	want := []int{2, 4, 8, 16, 32, 32, 32}
	for i, w := range want {
		if got := nextSlabLen(&made); got != w {
			t.Fatalf("slab %d holds %d handles, want %d", i, got, w)
		}
	}
	if made != len(want) {
		t.Fatalf("%d slabs counted, want %d", made, len(want))
	}
}

// TestSlabFill checks that a full slab of Views or Buffers fills its heap
// size class (3 KiB, 8 KiB) with the 8-byte header the heap puts before a
// pointerful array of more than 512 bytes: one more would not fit, so a
// field added to either struct shows here, with the count to change.
func TestSlabFill(t *testing.T) {
	const header = 8
	for _, c := range []struct {
		name     string
		size     uintptr
		n, class int
	}{
		{"View", unsafe.Sizeof(View{}), viewsPerSlab, 3072},
		{"Buffer", unsafe.Sizeof(Buffer{}), buffersPerSlab, 8192},
	} {
		used := c.n*int(c.size) + header
		if used > c.class {
			t.Errorf("%d %ss of %d bytes take %d bytes: more than the %d-byte class", c.n, c.name, c.size, used, c.class)
		}
		if used+int(c.size) <= c.class {
			t.Errorf("%d %ss of %d bytes take %d bytes: the %d-byte class holds one more", c.n, c.name, c.size, used, c.class)
		}
	}
	var s slab[View]
	s.full = viewsPerSlab
	for range 4 { // the growing slabs
		s.take(1, 1)
		s.used = len(s.arr)
	}
	if s.take(1, 1); len(s.arr) != viewsPerSlab {
		t.Fatalf("a full-size slab holds %d views, want %d", len(s.arr), viewsPerSlab)
	}
}

// TestLifecycleAllocations checks, outside the benchmarks, that a buffer's
// whole life — Alloc, View, a write and a read, Release, both completions —
// costs less than one heap allocation once the Allocator is warm (handles
// come from slabs, one allocation per slabSize buffers).
func TestLifecycleAllocations(t *testing.T) {
	if invariants.Enabled {
		t.Skip("built with the invariants tag: every mutator runs its checkers, which allocate")
	}
	for _, policy := range []Policy{SubrangeFenced, SubrangeAfterUsers, WholeFenced, WholeAfterUsers} {
		tl := sasync.NewTimeline()
		e, _ := tl.AddEngine("compute", sasync.Compute)
		a, err := New(Config{Capacity: 1 << 20, Policy: policy, Timeline: tl})
		if err != nil {
			t.Fatal(err)
		}
		half := strided.Bytes(0, 2048)
		var failed error
		life := func() {
			pt, _ := tl.Point(e)
			buf, err := a.Alloc(4096, pt)
			if err != nil {
				failed = err
				return
			}
			v, err := buf.View(half)
			if err != nil {
				failed = err
				return
			}
			w, _ := tl.Submit(e)
			r, _ := tl.Submit(e)
			for _, err := range []error{a.Use(buf.Whole(), w, Write), a.Use(v, r, Read), a.Release(buf), tl.Complete(w), tl.Complete(r)} {
				if err != nil && failed == nil {
					failed = err
				}
			}
		}
		for range 2 * slabSize { // warm: slabs at full size, scratch grown
			life()
		}
		tl.Forget()
		allocs := testing.AllocsPerRun(slabSize*4, life)
		if failed != nil {
			t.Fatalf("%v: %v", policy, failed)
		}
		if allocs >= 1 {
			t.Errorf("%v: %.2f allocations per buffer lifecycle, want < 1", policy, allocs)
		}
		if st := a.Stats(); st.Buffers != 0 || st.Users != 0 {
			t.Errorf("%v: %d buffers and %d users left", policy, st.Buffers, st.Users)
		}
	}
}

// TestSlabTake: values carved from a slab are zero, distinct and capped (a
// caller appending to one cannot write over the next); a request larger
// than a unit gets an array of its own.
func TestSlabTake(t *testing.T) {
	var s slab[int64]
	a, b := s.take(3, 8), s.take(5, 8)
	if len(a) != 3 || cap(a) != 3 || len(b) != 5 || cap(b) != 5 {
		t.Fatalf("lengths %d/%d and %d/%d", len(a), cap(a), len(b), cap(b))
	}
	for i := range a {
		a[i] = 7
	}
	_ = append(a, 9) // must reallocate, not touch b
	for _, v := range b {
		if v != 0 {
			t.Fatalf("b = %v after writing a", b)
		}
	}
	if s.made != 1 {
		t.Fatalf("%d arrays for 8 values of a 16-value first array", s.made)
	}
	if big := s.take(9, 8); len(big) != 9 || s.made != 1 {
		t.Fatalf("a request above the unit took %d values, %d arrays made", len(big), s.made)
	}
	p, q := s.next(), s.next()
	if p == q {
		t.Fatal("next returned the same value twice")
	}
}
