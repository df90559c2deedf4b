package trace

import (
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// Frame is a plan resolved against its program for code that draws or accounts for the
// arena bytes of each buffer: every alloc buffer's bytes are given relative to an origin,
// the offset of the buffer that anchors it in the plan — the buffer itself when the plan
// gives it an offset, its host when the plan lays it over a footprint of the host
// (Plan.Placements). A placed buffer's bytes are then its footprint, inside the host's
// [0, size), rather than [0, size) at an offset it does not have.
type Frame struct {
	p    *Program
	plan *Plan
	ps   *placements // nil for a plan of offsets only
}

// NewFrame resolves plan against p. A plan that does not fit p is an error matching
// ErrPlan, as for CheckPlan.
func NewFrame(p *Program, plan *Plan) (*Frame, error) {
	ps, err := fitPlan(p, plan)
	if err != nil {
		return nil, err
	}
	return &Frame{p: p, plan: plan, ps: ps}, nil
}

// Host returns the buffer that alloc buffer b is laid over, or -1 when b has an offset of
// its own (and for an external buffer).
func (f *Frame) Host(b int) int {
	if f.ps.placed(b) {
		return f.ps.host[b]
	}
	return -1
}

// Members returns the buffers the plan lays over buffer h (those whose Host is h), in
// buffer order; nil when there are none. The slice is the frame's; the caller must not
// modify it.
func (f *Frame) Members(h int) []int {
	if f.ps == nil {
		return nil
	}
	return f.ps.members[h]
}

// Origin returns the arena offset that b's bytes (Bytes, Footprint) are relative to: b's
// offset, or its host's when b is placed. It is 0 for an external buffer.
func (f *Frame) Origin(b int) int64 {
	if h := f.Host(b); h >= 0 {
		b = h
	}
	return f.plan.Offsets[f.p.Buffers[b].Name]
}

// Footprint returns the bytes r covers relative to Origin(r.Buffer), and whether the set
// is exact: Program.Footprint for a buffer with an offset; for a placed buffer, the bytes
// of r's layout re-expressed over the placement's footprint (Relayout). The set is the
// caller's own.
func (f *Frame) Footprint(r Ref) (ranges.Set, bool) {
	if !f.ps.placed(r.Buffer) {
		fp, exact := f.p.Footprint(r)
		return fp.Clone(), exact
	}
	whole := ranges.FromRanges(ranges.Range{Lo: 0, Hi: f.p.Buffers[f.ps.host[r.Buffer]].Size})
	l, ok := Relayout(f.p.Layout(r), f.p.Buffers[r.Buffer].Layout, f.ps.layout[r.Buffer])
	if !ok { // NewFrame checked every view of a placed buffer; stay conservative anyway
		return whole, false
	}
	set, exact, err := l.Cover(CoverBudget)
	if err != nil {
		return whole, false
	}
	return set, exact
}

// Layout returns r's layout relative to Origin(r.Buffer): Program.Layout for a buffer
// with an offset; for a placed buffer, r's layout re-expressed over the placement's
// footprint (Relayout), or the host's bytes [0, size) when it cannot be (NewFrame rejects
// that). The layout may share its slices with the program's; the caller must not modify
// them.
func (f *Frame) Layout(r Ref) strided.Layout {
	return f.ps.hostLayout(f.p, r)
}

// Bytes returns every byte of buffer b relative to Origin(b): [0, size) for a buffer with
// an offset, its footprint in the host for a placed one (exact: CheckPlan requires it).
func (f *Frame) Bytes(b int) ranges.Set {
	set, _ := f.Footprint(Ref{Buffer: b, View: -1})
	return set
}
