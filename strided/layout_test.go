package strided

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/subarena/subarena/ranges"
)

func TestValidateTable(t *testing.T) {
	const maxI = math.MaxInt64
	cases := []struct {
		name string
		l    Layout
		buf  int64
		err  error
	}{
		{"scalar fits", Layout{Offset: 4, Elem: 4}, 8, nil},
		{"scalar spills", Layout{Offset: 5, Elem: 4}, 8, ErrOutOfBounds},
		{"negative offset", Layout{Offset: -1, Elem: 1}, 8, ErrOutOfBounds},
		{"dense fits exactly", Layout{Shape: []int64{2, 3}, Strides: []int64{12, 4}, Elem: 4}, 24, nil},
		{"dense one byte short", Layout{Shape: []int64{2, 3}, Strides: []int64{12, 4}, Elem: 4}, 23, ErrOutOfBounds},
		{"negative stride fits", Layout{Offset: 12, Shape: []int64{4}, Strides: []int64{-4}, Elem: 4}, 16, nil},
		{"negative stride below 0", Layout{Offset: 8, Shape: []int64{4}, Strides: []int64{-4}, Elem: 4}, 16, ErrOutOfBounds},
		{"empty anywhere", Layout{Offset: -100, Shape: []int64{0, 5}, Strides: []int64{maxI, maxI}, Elem: 4}, 0, nil},
		{"length mismatch", Layout{Shape: []int64{2}, Elem: 4}, 8, ErrInvalidLayout},
		{"zero elem", Layout{Shape: []int64{2}, Strides: []int64{4}}, 8, ErrInvalidLayout},
		{"negative elem", Layout{Elem: -4}, 8, ErrInvalidLayout},
		{"negative dim", Layout{Shape: []int64{-2}, Strides: []int64{4}, Elem: 4}, 8, ErrInvalidLayout},
		{"negative buffer", Layout{Elem: 4}, -1, ErrInvalidLayout},
		{"elements overflow", Layout{Shape: []int64{1 << 32, 1 << 32}, Strides: []int64{0, 0}, Elem: 1}, 8, ErrOverflow},
		{"span overflow", Layout{Shape: []int64{3}, Strides: []int64{maxI/2 + 1}, Elem: 1}, 8, ErrOverflow},
		{"sum overflow", Layout{Shape: []int64{2, 2}, Strides: []int64{maxI/2 + 1, maxI/2 + 1}, Elem: 1}, 8, ErrOverflow},
		{"offset overflow", Layout{Offset: maxI - 2, Elem: 4}, maxI, ErrOverflow},
		{"min stride", Layout{Offset: 0, Shape: []int64{2}, Strides: []int64{math.MinInt64}, Elem: 1}, 8, ErrOverflow},
		{"broadcast huge", Layout{Shape: []int64{1 << 40}, Strides: []int64{0}, Elem: 8}, 8, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.l.Validate(c.buf)
			if c.err == nil && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("Validate: %v, want %v", err, c.err)
			}
		})
	}
}

// Extreme and random values: no panic, and every error matches one sentinel.
func TestNoPanicOnExtremes(t *testing.T) {
	vals := []int64{0, 1, 2, -1, -2, 3, 7, math.MaxInt64, math.MinInt64, math.MaxInt64 / 2, math.MinInt64 / 2, 1 << 32, -(1 << 32)}
	rng := rand.New(rand.NewPCG(15, 16))
	pick := func() int64 { return vals[rng.IntN(len(vals))] }
	sentinels := []error{ErrInvalidLayout, ErrOutOfBounds, ErrOverflow, ErrNotExpressible, ErrShapeMismatch, ErrInvalidArgument}
	check := func(what string, err error) {
		if err == nil {
			return
		}
		for _, s := range sentinels {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("%s: error %v matches no sentinel", what, err)
	}
	for range 2000 {
		nd := rng.IntN(4)
		l := Layout{Offset: pick(), Shape: make([]int64, nd), Strides: make([]int64, nd), Elem: pick()}
		for k := range nd {
			l.Shape[k], l.Strides[k] = pick(), pick()
			if rng.IntN(2) == 0 {
				l.Shape[k] = rng.Int64N(4)
			}
		}
		check("validate", l.Validate(pick()))
		_, err := l.NumElems()
		check("numelems", err)
		ext, err := l.Extent()
		check("extent", err)
		var s ranges.Set
		exact, err := l.AppendCover(&s, 1+rng.IntN(8))
		check("cover", err)
		if err == nil {
			if cerr := s.CheckInvariants(); cerr != nil {
				t.Fatal(cerr)
			}
			if b := s.Bounds(); !s.IsEmpty() && (b.Lo < ext.Lo || b.Hi > ext.Hi) {
				t.Fatalf("%v: cover %v outside extent %v (exact %v)", l, b, ext, exact)
			}
		}
		_ = l.Normalize()
		_ = l.IsDense()
		_ = l.IsContiguous()
		_ = Overlap(l, l, 4)
		_, err = l.Slice(0, pick(), pick(), pick())
		check("slice", err)
		_, err = l.Select(rng.IntN(4)-1, pick())
		check("select", err)
		_, err = l.Reshape(pick(), pick())
		check("reshape", err)
		_, err = l.Expand(pick(), pick(), pick())
		check("expand", err)
		_, err = l.Split(0, pick(), pick())
		check("split", err)
		_, err = l.AsStrided(pick(), []int64{pick()}, []int64{pick()})
		check("as_strided", err)
		_, err = Dense(pick(), []int64{pick(), pick()}, pick())
		check("dense", err)
	}
}

func TestDenseAndContiguous(t *testing.T) {
	d, err := Dense(16, []int64{2, 0, 3}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{12, 12, 4}; !equal(d.Strides, want) {
		t.Errorf("Dense strides %v, want %v", d.Strides, want)
	}
	d, _ = Dense(0, []int64{2, 3, 4}, 2)
	if !d.IsContiguous() || !d.IsDense() {
		t.Errorf("dense layout not contiguous")
	}
	tr, _ := d.Transpose(1, 2)
	if tr.IsContiguous() || !tr.IsDense() {
		t.Errorf("transpose: contiguous %v dense %v", tr.IsContiguous(), tr.IsDense())
	}
	col, _ := d.Select(2, 1)
	if col.IsContiguous() || col.IsDense() {
		t.Errorf("column: contiguous %v dense %v", col.IsContiguous(), col.IsDense())
	}
	if _, err := Dense(0, []int64{1 << 40, 1 << 30}, 4); !errors.Is(err, ErrOverflow) {
		t.Errorf("huge dense: %v", err)
	}
	if b := Bytes(3, 5); !b.IsContiguous() || b.String() != "{off=3 shape=[5] strides=[1] elem=1}" {
		t.Errorf("Bytes: %v", b)
	}
	if ext, _ := Bytes(3, 5).Extent(); ext != (ranges.Range{Lo: 3, Hi: 8}) {
		t.Errorf("Extent: %v", ext)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSqueeze(t *testing.T) {
	l := Layout{Offset: 8, Shape: []int64{1, 3, 1, 2}, Strides: []int64{96, 32, 7, 4}, Elem: 4}
	s := l.Squeeze()
	want := Layout{Offset: 8, Shape: []int64{3, 2}, Strides: []int64{32, 4}, Elem: 4}
	if !s.Equal(want) {
		t.Fatalf("Squeeze(%v) = %v, want %v", l, s, want)
	}
	a, _, err := l.Cover(0)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Cover(0)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(&b) {
		t.Fatalf("Squeeze changed the bytes: %v vs %v", a.Runs(), b.Runs())
	}
	s.Shape[0] = 5
	if l.Shape[1] != 3 {
		t.Fatal("Squeeze shares its Shape with l")
	}
	if one := (Layout{Shape: []int64{1, 1}, Strides: []int64{4, 4}, Elem: 4}).Squeeze(); len(one.Shape) != 0 || len(one.Strides) != 0 {
		t.Fatalf("Squeeze of a single element = %v", one)
	}
}
