package ranges

import "testing"

func TestGranule(t *testing.T) {
	g := Granule(256)
	for _, c := range []struct{ n, up, down int64 }{
		{0, 0, 0}, {1, 256, 0}, {255, 256, 0}, {256, 256, 256}, {257, 512, 256}, {1000, 1024, 768},
	} {
		if got := g.Up(c.n); got != c.up {
			t.Errorf("Up(%d) = %d, want %d", c.n, got, c.up)
		}
		if got := g.Down(c.n); got != c.down {
			t.Errorf("Down(%d) = %d, want %d", c.n, got, c.down)
		}
	}
	if got := g.Out(Range{Lo: 10, Hi: 300}); got != (Range{Lo: 0, Hi: 512}) {
		t.Errorf("Out = %v", got)
	}
	if got := g.In(Range{Lo: 10, Hi: 600}); got != (Range{Lo: 256, Hi: 512}) {
		t.Errorf("In = %v", got)
	}
	if got := g.In(Range{Lo: 10, Hi: 300}); !got.Empty() {
		t.Errorf("In of a run inside one granule = %v, want empty", got)
	}
	for _, c := range []struct {
		g  Granule
		ok bool
	}{{1, true}, {256, true}, {0, false}, {-256, false}, {3, false}, {96, false}} {
		if c.g.Valid() != c.ok {
			t.Errorf("Granule(%d).Valid() = %v", c.g, !c.ok)
		}
	}
}

// TestAddClipped checks AddClipped against AddSet of the intersection built
// byte by byte.
func TestAddClipped(t *testing.T) {
	o := FromRanges(Range{0, 10}, Range{20, 30}, Range{40, 50}, Range{60, 70})
	for _, c := range []struct {
		r    Range
		want []Range
	}{
		{Range{5, 45}, []Range{{5, 10}, {20, 30}, {40, 45}}},
		{Range{10, 20}, nil},
		{Range{0, 100}, []Range{{0, 10}, {20, 30}, {40, 50}, {60, 70}}},
		{Range{65, 66}, []Range{{65, 66}}},
		{Range{7, 7}, nil},
	} {
		var s Set
		s.Add(Range{100, 110}) // what s held before stays
		s.AddClipped(&o, c.r)
		want := FromRanges(append(c.want, Range{100, 110})...)
		if !s.Equal(&want) {
			t.Errorf("AddClipped(%v) = %v, want %v", c.r, &s, &want)
		}
	}
}
