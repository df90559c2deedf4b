package ranges

// Granule is an arena's unit and alignment in bytes, a power of two: every
// block starts on a multiple of it and spans whole granules. Its methods are
// the one place the rounding is written; they require a valid Granule and
// results that fit in an int64.
type Granule int64

// Valid reports whether g is a power of two.
func (g Granule) Valid() bool { return g > 0 && g&(g-1) == 0 }

// Up rounds n up to a multiple of g.
func (g Granule) Up(n int64) int64 { return (n + int64(g) - 1) &^ (int64(g) - 1) }

// Down rounds n down to a multiple of g.
func (g Granule) Down(n int64) int64 { return n &^ (int64(g) - 1) }

// Out returns the granules r touches: [Down(Lo), Up(Hi)).
func (g Granule) Out(r Range) Range { return Range{Lo: g.Down(r.Lo), Hi: g.Up(r.Hi)} }

// In returns the granules r covers whole: [Up(Lo), Down(Hi)), which is
// empty (Lo >= Hi) when r covers none.
func (g Granule) In(r Range) Range { return Range{Lo: g.Up(r.Lo), Hi: g.Down(r.Hi)} }
