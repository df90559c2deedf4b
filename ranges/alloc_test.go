package ranges

import "testing"

// The in-place operations must not allocate once the receiver has the capacity.
func TestInPlaceZeroAlloc(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	mk := func(n, period, width int64) Set {
		var s Set
		for i := range n {
			s.Add(Range{i * period, i*period + width})
		}
		return s
	}
	a := mk(100, 10, 4)
	b := mk(100, 10, 3) // overlaps every run of a
	c := mk(100, 7, 2)
	var s Set
	s.runs = make([]Range, 0, 1024)
	cases := []struct {
		name string
		fn   func()
	}{
		{"Add append", func() { s.Reset(); s.Add(Range{0, 1}); s.Add(Range{5, 6}); s.Add(Range{6, 9}) }},
		{"Add insert", func() { s.Reset(); s.Add(Range{50, 60}); s.Add(Range{0, 1}); s.Add(Range{20, 25}) }},
		{"Remove split", func() { s.Reset(); s.Add(Range{0, 100}); s.Remove(Range{10, 20}); s.Remove(Range{30, 40}) }},
		{"AddSet", func() { s.Reset(); s.AddSet(&a); s.AddSet(&c) }},
		{"RemoveSet", func() { s.Reset(); s.AddSet(&a); s.RemoveSet(&c) }},
		{"RetainSet", func() { s.Reset(); s.AddSet(&a); s.RetainSet(&b) }},
		{"queries", func() {
			_ = a.Contains(55)
			_ = a.ContainsRange(Range{50, 52})
			_, _ = a.Overlaps(Range{3, 12})
			_, _ = a.OverlapsSet(&c)
			_ = a.Runs()
			_ = a.Len()
			_ = a.Bounds()
		}},
		{"All", func() {
			n := int64(0)
			for r := range a.All() {
				n += r.Len()
			}
			if n != a.Len() {
				panic("All")
			}
		}},
	}
	for _, c := range cases {
		c.fn() // warm the capacity
		if n := testing.AllocsPerRun(50, c.fn); n != 0 {
			t.Errorf("%s: %v allocs per run, want 0", c.name, n)
		}
	}
}
