package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace/internal/tracejson"
)

// Placement sentinels. Every error CheckPlan returns for a bad placement matches ErrPlan,
// ErrPlacement and one more specific sentinel: ErrUnknownName (the buffer or host is no
// alloc buffer of the trace), ErrDuplicateName (the buffer also has an offset), ErrExternal
// (an external buffer is placed), ErrOutOfBounds (the footprint leaves the host), ErrShape
// (element count mismatch, or a malformed shape), ErrInvalidElem (element size mismatch),
// ErrOverflow, or one of the three below.
var (
	// ErrPlacement: a plan's "placements" entry does not fit the trace.
	ErrPlacement = newSentinel("trace: bad placement", "")
	// ErrUnplacedHost: a placement's host has no offset of its own (it is external,
	// itself placed, or absent from the plan).
	ErrUnplacedHost = newSentinel("trace: placement host has no offset", "")
	// ErrOverlappingFootprint: a footprint is not one-to-one: two of its elements share a
	// byte (or it is too irregular for the checker to tell).
	ErrOverlappingFootprint = newSentinel("trace: footprint elements overlap", "")
	// ErrInexpressible: the buffer, or a view of it, cannot be laid over the footprint:
	// the host is allocated after the buffer, or a view's walk would carry from one of the
	// buffer's dimensions into the next.
	ErrInexpressible = newSentinel("trace: placement not expressible", "")
)

// Placement lays a buffer over a strided footprint of another buffer, its host, instead of
// giving it an offset: element i of the buffer's natural dense layout (in row-major order)
// occupies element i of the footprint. The footprint is a layout relative to the host's
// first byte, as a view step's is:
//
//	"placements": {"gate_silu": {"of": "gate_up", "offset": 0, "shape": [32, 688],
//	                             "strides": [5504, 4], "elem": 4}}
//
// The footprint must lie inside the host, hold exactly the buffer's element count, use its
// element size, and put no two elements on a shared byte. Its shape need not be the
// buffer's, but every view of the buffer must be expressible over it (see Relayout).
type Placement struct {
	// Of names the host: an alloc buffer with an offset in the same plan.
	Of string `json:"of"`
	// Offset is the footprint's first element, in bytes from the host's first byte.
	Offset int64 `json:"offset"`
	// Shape and Strides (bytes) are outermost first, of equal length.
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	// Elem is the element size in bytes: the buffer's own.
	Elem int64 `json:"elem"`
}

// Layout returns the footprint as a layout relative to the host's first byte. It shares
// the placement's slices.
func (pl Placement) Layout() strided.Layout {
	return strided.Layout{Offset: pl.Offset, Shape: pl.Shape, Strides: pl.Strides, Elem: pl.Elem}
}

// PlacementOf returns the placement of a buffer laid over footprint l of host.
func PlacementOf(host string, l strided.Layout) Placement {
	l = l.Clone()
	if l.Shape == nil {
		l.Shape, l.Strides = []int64{}, []int64{}
	}
	return Placement{Of: host, Offset: l.Offset, Shape: l.Shape, Strides: l.Strides, Elem: l.Elem}
}

// Equal reports whether two placements name the same host and footprint.
func (pl Placement) Equal(o Placement) bool {
	return pl.Of == o.Of && pl.Layout().Equal(o.Layout())
}

// MarshalJSON renders the placement as its plan object, keys in the order of the format.
func (pl Placement) MarshalJSON() ([]byte, error) {
	return []byte(placementJSON(pl)), nil
}

func placementJSON(pl Placement) string {
	return `{"of": ` + tracejson.Quote(pl.Of) + `, "offset": ` + strconv.FormatInt(pl.Offset, 10) +
		`, "shape": ` + tracejson.Ints(pl.Shape) + `, "strides": ` + tracejson.Ints(pl.Strides) +
		`, "elem": ` + strconv.FormatInt(pl.Elem, 10) + `}`
}

// placementKeys are the keys of one placement object, all required.
var placementKeys = []string{"of", "offset", "shape", "strides", "elem"}

// parsePlacements reads the "placements" object of a plan.
func parsePlacements(raw json.RawMessage) (map[string]Placement, error) {
	if isNull(raw) {
		return nil, nil
	}
	obj, err := readObject(raw)
	if err != nil {
		return nil, fmt.Errorf("plan: placements: %w: %w", ErrPlacement, err)
	}
	out := make(map[string]Placement, len(obj))
	for _, f := range obj {
		pl, err := parsePlacement(f.raw)
		if err != nil {
			return nil, fmt.Errorf("plan: placement of %q: %w: %w", f.key, ErrPlacement, err)
		}
		out[f.key] = pl
	}
	return out, nil
}

func parsePlacement(raw json.RawMessage) (Placement, error) {
	var pl Placement
	obj, err := readObject(bytes.TrimSpace(raw))
	if err != nil {
		return pl, err
	}
	if err := onlyKeys(obj, placementKeys); err != nil {
		return pl, err
	}
	for _, k := range placementKeys {
		v, ok := obj.get(k)
		if !ok {
			return pl, fmt.Errorf("%w: %s", ErrMissingKey, k)
		}
		switch k {
		case "of":
			pl.Of, err = jsonString(v)
		case "offset":
			pl.Offset, err = jsonInt(v)
		case "shape":
			pl.Shape, err = jsonInts(v)
		case "strides":
			pl.Strides, err = jsonInts(v)
		case "elem":
			pl.Elem, err = jsonInt(v)
		}
		if err != nil {
			return pl, fmt.Errorf("%s: %w", k, err)
		}
	}
	return pl, nil
}

// writePlacements renders a plan's "placements" key (without a trailing comma), names
// sorted.
func writePlacements(b *bytes.Buffer, pls map[string]Placement) {
	names := make([]string, 0, len(pls))
	for n := range pls {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString(`  "placements": {`)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    " + tracejson.Quote(n) + ": " + placementJSON(pls[n]))
	}
	b.WriteString("\n  }")
}

// placements is a plan's placements resolved against a program.
type placements struct {
	// host[b] is the host buffer of placed buffer b, -1 for buffers with an offset.
	host []int
	// layout[b] is placed buffer b's natural layout in host coordinates (the footprint,
	// reshaped to b's natural shape when it had another).
	layout []strided.Layout
	// members[h] lists the buffers placed over h, in buffer order.
	members map[int][]int
}

// placed reports whether buffer b has a placement.
func (ps *placements) placed(b int) bool { return ps != nil && ps.host[b] >= 0 }

// resolvePlacements validates plan's placements against p (whose offsets CheckPlan has
// validated) and resolves them.
func resolvePlacements(p *Program, plan *Plan) (*placements, error) {
	if len(plan.Placements) == 0 {
		return nil, nil
	}
	ps := &placements{host: make([]int, len(p.Buffers)), layout: make([]strided.Layout, len(p.Buffers)),
		members: map[int][]int{}}
	for i := range ps.host {
		ps.host[i] = -1
	}
	names := make([]string, 0, len(plan.Placements))
	for n := range plan.Placements {
		names = append(names, n)
	}
	sort.Strings(names)
	var viewsOf map[int][]int
	for _, name := range names {
		pl := plan.Placements[name]
		fail := func(sentinel error, format string, args ...any) error {
			return fmt.Errorf("%w: %w: placement of %q over %q: %w: %s", ErrPlan, ErrPlacement, name, pl.Of,
				sentinel, fmt.Sprintf(format, args...))
		}
		ref, ok := p.Lookup(name)
		switch {
		case !ok:
			return nil, fail(ErrUnknownName, "no buffer %q in the trace", name)
		case ref.View >= 0:
			return nil, fail(ErrUnknownName, "%q is a view, not a buffer", name)
		case p.Buffers[ref.Buffer].External:
			return nil, fail(ErrExternal, "%q is an external buffer and is not placed", name)
		}
		if _, dup := plan.Offsets[name]; dup {
			return nil, fail(ErrDuplicateName, "%q has an offset too", name)
		}
		b := ref.Buffer
		href, ok := p.Lookup(pl.Of)
		switch {
		case !ok:
			return nil, fail(ErrUnknownName, "no buffer %q in the trace", pl.Of)
		case href.View >= 0:
			return nil, fail(ErrUnknownName, "host %q is a view, not a buffer", pl.Of)
		}
		h := href.Buffer
		if _, ok := plan.Offsets[pl.Of]; !ok || p.Buffers[h].External {
			return nil, fail(ErrUnplacedHost, "host %q is external, placed or unplaced", pl.Of)
		}
		if p.Buffers[h].Step > p.Buffers[b].Step {
			return nil, fail(ErrInexpressible, "host %q is allocated after %q", pl.Of, name)
		}
		l := pl.Layout()
		if err := l.Validate(p.Buffers[h].Size); err != nil {
			switch {
			case errors.Is(err, strided.ErrOutOfBounds):
				return nil, fail(ErrOutOfBounds, "%v", err)
			case errors.Is(err, strided.ErrOverflow):
				return nil, fail(ErrOverflow, "%v", err)
			case pl.Elem <= 0:
				return nil, fail(ErrInvalidElem, "%v", err)
			}
			return nil, fail(ErrShape, "%v", err)
		}
		nat := p.Buffers[b].Layout
		if l.Elem != nat.Elem {
			return nil, fail(ErrInvalidElem, "elem %d, %q has elem %d", l.Elem, name, nat.Elem)
		}
		n, _ := l.NumElems()
		if want, _ := nat.NumElems(); n != want {
			return nil, fail(ErrShape, "%d elements, %q has %d", n, name, want)
		}
		cover, exact, err := l.Cover(CoverBudget)
		if err != nil || !exact || cover.Len() != p.Buffers[b].Size {
			return nil, fail(ErrOverlappingFootprint, "%d elements of %d bytes cover %d bytes (exact: %v)",
				n, l.Elem, cover.Len(), exact)
		}
		if !sameSqueezed(l, nat) {
			if l, err = l.Reshape(nat.Shape...); err != nil {
				return nil, fail(ErrInexpressible, "footprint cannot take %q's shape %v: %v", name, nat.Shape, err)
			}
		} else {
			l = l.Clone()
		}
		if _, ok := Relayout(nat, nat, l); !ok {
			return nil, fail(ErrInexpressible, "%q cannot be laid over %v", name, l)
		}
		if viewsOf == nil {
			viewsOf = map[int][]int{}
			for v := range p.Views {
				viewsOf[p.Views[v].Buffer] = append(viewsOf[p.Views[v].Buffer], v)
			}
		}
		for _, v := range viewsOf[b] {
			if _, ok := Relayout(p.Views[v].Layout, nat, l); !ok {
				return nil, fail(ErrInexpressible, "view %q (%v) cannot be re-expressed", p.Views[v].Name, p.Views[v].Layout)
			}
		}
		ps.host[b] = h
		ps.layout[b] = l
	}
	for b, h := range ps.host {
		if h >= 0 {
			ps.members[h] = append(ps.members[h], b)
		}
	}
	return ps, nil
}

// sameSqueezed reports whether a and b have the same shape once size-1 dimensions are
// dropped.
func sameSqueezed(a, b strided.Layout) bool {
	return slices.Equal(a.Squeeze().Shape, b.Squeeze().Shape)
}

// Relayout maps view v, a layout relative to buffer B whose natural layout is the dense
// nat, onto a placement of B: target is the layout of B's elements (nat's shape up to
// size-1 dimensions) relative to the host. The result walks, element by element, the
// host bytes of the elements v walks. It reports false when v cannot be expressed over
// target: a different element size, an offset inside an element, or a dimension whose
// walk would carry from one of B's dimensions into the next (which a strided target
// would tear apart).
func Relayout(v, nat, target strided.Layout) (strided.Layout, bool) {
	e := nat.Elem
	sq, tsq := nat.Squeeze(), target.Squeeze()
	shape, dense := sq.Shape, sq.Strides
	tshape, tstrides := tsq.Shape, tsq.Strides
	if v.Elem != e || target.Elem != e || !slices.Equal(shape, tshape) || len(v.Shape) != len(v.Strides) {
		return strided.Layout{}, false
	}
	if len(shape) == 0 { // a single element
		if v.Offset != nat.Offset {
			return strided.Layout{}, false
		}
		out := v.Clone()
		out.Offset = target.Offset
		for k := range out.Strides {
			if out.Shape[k] > 1 && out.Strides[k] != 0 {
				return strided.Layout{}, false
			}
			out.Strides[k] = 0
		}
		return out, true
	}
	// Index of the view's first element in B's dimensions (mixed radix).
	o := v.Offset - nat.Offset
	if o < 0 || o%e != 0 {
		return strided.Layout{}, false
	}
	var buf [24]int64 // index, lowest and highest walk per dimension
	var idx []int64
	if 3*len(shape) <= len(buf) {
		idx = buf[:3*len(shape)]
	} else {
		idx = make([]int64, 3*len(shape))
	}
	lo, hi := idx[len(shape):2*len(shape)], idx[2*len(shape):]
	idx = idx[:len(shape)]
	rem := o
	for k := range shape {
		idx[k] = rem / dense[k]
		rem %= dense[k]
	}
	if idx[0] >= shape[0] {
		return strided.Layout{}, false
	}
	copy(lo, idx)
	copy(hi, idx)
	out := strided.Layout{Shape: slices.Clone(v.Shape), Strides: make([]int64, len(v.Shape)), Elem: e}
	if out.Shape == nil {
		out.Shape = []int64{}
	}
	for m, n := range v.Shape {
		s := v.Strides[m]
		if n == 0 {
			return strided.Layout{}, false
		}
		if n == 1 || s == 0 {
			continue
		}
		k := -1
		for q := range dense {
			if s%dense[q] == 0 {
				k = q
				break
			}
		}
		if k < 0 {
			return strided.Layout{}, false
		}
		c := s / dense[k]
		walk := c * (n - 1)
		if walk/(n-1) != c { // overflow
			return strided.Layout{}, false
		}
		if walk < 0 {
			lo[k] += walk
		} else {
			hi[k] += walk
		}
		out.Strides[m] = c * tstrides[k]
	}
	out.Offset = target.Offset
	for k := range shape {
		if lo[k] < 0 || hi[k] >= shape[k] {
			return strided.Layout{}, false
		}
		out.Offset += idx[k] * tstrides[k]
	}
	return out, true
}

// hostLayout returns r's layout in its host's coordinates: its own layout for a buffer
// with an offset, its relayout over the footprint for a placed one.
func (ps *placements) hostLayout(p *Program, r Ref) strided.Layout {
	l := p.Layout(r)
	if !ps.placed(r.Buffer) {
		return l
	}
	out, ok := Relayout(l, p.Buffers[r.Buffer].Layout, ps.layout[r.Buffer])
	if !ok { // resolvePlacements rejected this; stay conservative anyway
		return strided.Bytes(0, p.Buffers[ps.host[r.Buffer]].Size)
	}
	return out
}

// ViewPlacements returns p's trace rewritten so that plan needs no placements: every
// placed buffer becomes a view of its host with the footprint's layout, each of its views
// is re-expressed over the footprint, and each host with placed buffers is released once,
// at the last release of its group (never, if any of them is held to the end). The plan
// returned has plan's offsets and no placements. check.Plan of the rewrite sees the same pairs
// of buffers as check.Plan of plan on p, but not the rules between a host and the buffers
// placed over it. The rewrite is validated; a trace it cannot express (a host discarding
// bytes a placed buffer still uses) is an error matching ErrInexpressible.
func ViewPlacements(p *Program, plan *Plan) (*Trace, *Plan, error) {
	ps, err := fitPlan(p, plan)
	if err != nil {
		return nil, nil, err
	}
	t := p.Trace
	flat := *plan
	flat.Placements = nil
	if ps == nil {
		return t, &flat, nil
	}
	// final[h]: step index of the one release of host h's group, -1 if held.
	final := map[int]int{}
	for h, ms := range ps.members {
		last := p.Buffers[h].Release
		for _, m := range ms {
			if rel := p.Buffers[m].Release; rel < 0 || last < 0 {
				last = -1
			} else {
				last = max(last, rel)
			}
		}
		final[h] = last
	}
	hostOf := func(b int) int {
		if ps.host[b] >= 0 {
			return ps.host[b]
		}
		return b
	}
	out := &Trace{Name: t.Name, Granule: t.Granule, Engines: slices.Clone(t.Engines), Steps: make([]Step, 0, len(t.Steps))}
	for i, s := range t.Steps {
		switch s.Kind {
		case KindAlloc:
			b := p.StepIndex[i]
			if !ps.placed(b) {
				break
			}
			l := ps.layout[b]
			out.Steps = append(out.Steps, Step{Kind: KindView, Name: s.Name, Of: p.Buffers[ps.host[b]].Name,
				Offset: l.Offset, Shape: slices.Clone(l.Shape), Strides: slices.Clone(l.Strides), Elem: l.Elem})
			continue
		case KindView:
			v := p.StepIndex[i]
			view := &p.Views[v]
			if !ps.placed(view.Buffer) {
				break
			}
			l := ps.hostLayout(p, Ref{Buffer: view.Buffer, View: v})
			parent := ps.hostLayout(p, Ref{Buffer: view.Buffer, View: view.Parent})
			out.Steps = append(out.Steps, Step{Kind: KindView, Name: s.Name, Of: s.Of,
				Offset: l.Offset - parent.Offset, Shape: l.Shape, Strides: l.Strides, Elem: l.Elem})
			continue
		case KindRelease:
			ref, _ := p.Lookup(s.Name)
			if ref.View >= 0 {
				break // a discard stays where it is
			}
			h := hostOf(ref.Buffer)
			last, grouped := final[h]
			if !grouped {
				break
			}
			if i == last {
				out.Steps = append(out.Steps, Step{Kind: KindRelease, Name: p.Buffers[h].Name})
			}
			continue
		}
		out.Steps = append(out.Steps, s.clone())
	}
	if err := out.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w: the rewritten trace is invalid: %w", ErrPlacement, ErrInexpressible, err)
	}
	return out, &flat, nil
}
