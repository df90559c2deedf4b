package trace

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/subarena/subarena/internal/checked"
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
)

// Validate checks every rule of the format (see Resolve) and returns the first broken one.
func (t *Trace) Validate() error {
	_, err := t.Resolve()
	return err
}

// Resolve validates t and binds its names. It checks, in step order, every rule of
// subarena-trace/v1: well-formed steps (see Parse), unknown or duplicate names (data and
// op names are separate namespaces; engines must be unique), use after release (a released
// buffer, a discarded view, a view of either, or an op touching discarded bytes), views
// inside their buffer, shape/stride lengths, sizes and elems > 0, waits and syncs on ops
// already submitted, and int64 overflow, the simulated schedule's times included. The
// error is a *StepError. t is not modified.
func (t *Trace) Resolve() (*Program, error) {
	return t.ResolveReusing(nil)
}

// ResolveReusing is Resolve, taking the memory it needs from old where old
// has enough: its slices and name maps are emptied and filled again. old
// (nil: none) is a Program the caller is done with: it and every slice it
// gave out (Buffers, Views, Ops, their layouts and uses) must not be used
// again, nor any Clone of it. A caller that resolves trace after trace,
// such as a planner called on graph after graph, resolves each in place of
// the last.
func (t *Trace) ResolveReusing(old *Program) (*Program, error) {
	if err := checkGranule(t.Granule); err != nil {
		return nil, &StepError{Index: -1, Rule: RuleOf(err), Err: err}
	}
	if len(t.Engines) == 0 {
		return nil, &StepError{Index: -1, Rule: RuleOf(ErrNoEngines), Err: ErrNoEngines}
	}
	if len(t.Engines) > MaxEngines {
		return nil, stepErr(-1, ErrLimit, "%d engines, above the limit of %d", len(t.Engines), MaxEngines)
	}
	// One pass sizes everything Resolve makes: the name maps, the entity
	// slices, and the slabs that hold every op's uses and every layout's
	// shape and strides, so that resolving costs a fixed number of
	// allocations whatever the trace's length.
	var nBuf, nView, nOp, nSync, nUse, nInt int
	for i := range t.Steps {
		s := &t.Steps[i]
		switch s.Kind {
		case KindAlloc, KindExternal:
			nBuf++
			nInt += max(2, 2*len(s.Shape))
		case KindView:
			nView++
			nInt += len(s.Shape) + len(s.Strides)
		case KindOp:
			nOp++
			nUse += len(s.Reads) + len(s.Writes)
		case KindSync:
			nSync++
		}
	}
	if old == nil {
		old = &Program{}
	}
	r := &resolver{t: t, p: &Program{
		Trace:      t,
		Buffers:    reuse(old.Buffers, nBuf),
		Views:      reuse(old.Views, nView),
		Ops:        reuse(old.Ops, nOp),
		StepIndex:  reuse(old.StepIndex, len(t.Steps))[:len(t.Steps)],
		data:       reuseMap(old.data, nBuf+nView),
		ops:        reuseMap(old.ops, nOp),
		engine:     reuseMap(old.engine, len(t.Engines)),
		coverWhole: reuse(old.coverWhole, 0),
		coverView:  reuse(old.coverView, 0),
	},
		released:  reuse(old.released, nBuf),
		discarded: reuse(old.discarded, nBuf),
		uses:      reuse(old.uses, nUse),
		ints:      reuse(old.ints, nInt),
	}
	if nSync > 0 {
		r.p.Syncs = reuse(old.Syncs, nSync)
	}
	*old = Program{} // nothing of old is old's any more
	if !utf8.ValidString(t.Name) {
		return nil, stepErr(-1, ErrInvalidName, "trace name %q is not valid UTF-8", t.Name)
	}
	for i, e := range t.Engines {
		if !utf8.ValidString(e) {
			return nil, stepErr(-1, ErrInvalidName, "engine %q is not valid UTF-8", e)
		}
		if e == "" {
			return nil, stepErr(-1, ErrInvalidName, "engine %d has an empty name", i)
		}
		if _, dup := r.p.engine[e]; dup {
			return nil, stepErr(-1, ErrDuplicateEngine, "engine %q", e)
		}
		r.p.engine[e] = i
	}
	for i, s := range t.Steps {
		if err := checkStepLocal(i, s); err != nil {
			return nil, err
		}
		if err := r.step(i, s); err != nil {
			return nil, err
		}
	}
	if err := checkSchedule(r.p); err != nil {
		return nil, err
	}
	// The slabs and the resolver's state stay with the program, for a
	// later ResolveReusing to take.
	r.p.uses, r.p.ints, r.p.released, r.p.discarded = r.uses, r.ints, r.released, r.discarded
	return r.p, nil
}

// reuse returns s emptied (its elements zeroed) when it can hold n
// elements, else a new slice of capacity n.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n || s == nil {
		return make([]T, 0, n)
	}
	clear(s[:cap(s)])
	return s[:0]
}

// reuseMap returns m emptied, or a new map sized for n when m is nil.
func reuseMap[K comparable, V any](m map[K]V, n int) map[K]V {
	if m == nil {
		return make(map[K]V, n)
	}
	clear(m)
	return m
}

type resolver struct {
	t *Trace
	p *Program
	// uses and ints are slabs presized for the whole trace: each op's
	// Uses, each layout's Shape and Strides are cut from them, capped at
	// their own length.
	uses []Use
	ints []int64
	// lastEngine is the engine name engineOf found last, at lastEngineIndex.
	lastEngine      string
	lastEngineIndex int
	// released[b]: buffer b has been released; discarded[b]: bytes of b discarded so far
	// (exact part only), kept per buffer.
	released  []bool
	discarded []ranges.Set
	// liveBytes is the bytes of the buffers allocated and not yet released, each rounded
	// up to the granule: at most ArenaLimit(granule).
	liveBytes int64
}

// granules returns size rounded up to the trace's granule (size is at most ArenaLimit,
// a multiple of the granule, so this cannot overflow).
func (r *resolver) granules(size int64) int64 {
	g := r.t.Granule
	return (size + g - 1) &^ (g - 1)
}

// checkLive checks an alloc step against the arena's limit: every buffer
// fits an arena (ArenaLimit), and the buffers allocated and not yet released fit one
// together.
func (r *resolver) checkLive(i int, s Step) error {
	if s.Kind != KindAlloc || s.Size <= 0 {
		return nil // an external buffer takes no arena bytes; checkStepLocal refuses size <= 0
	}
	limit := ArenaLimit(r.t.Granule) // the message is formatted only for a step refused
	if s.Size > limit {
		err := CheckArenaBytes(fmt.Sprintf("alloc %q of %d B", s.Name, s.Size), s.Size, r.t.Granule)
		return &StepError{Index: i, Rule: RuleOf(ErrLimit), Err: err}
	}
	r.liveBytes += r.granules(s.Size)
	if r.liveBytes > limit {
		err := CheckArenaBytes(fmt.Sprintf("alloc %q: %d B allocated and not released", s.Name, r.liveBytes),
			r.liveBytes, r.t.Granule)
		return &StepError{Index: i, Rule: RuleOf(ErrLimit), Err: err}
	}
	return nil
}

// isOp reports whether some op step of the trace is named name: what tells
// a wait or sync on a later op from one on no op at all (asked only to word
// an error).
func (r *resolver) isOp(name string) bool {
	for i := range r.t.Steps {
		if s := &r.t.Steps[i]; s.Kind == KindOp && s.Name == name {
			return true
		}
	}
	return false
}

// clone copies v into the ints slab, capped at its length; nil stays nil.
func (r *resolver) clone(v []int64) []int64 {
	if v == nil {
		return nil
	}
	at := len(r.ints)
	r.ints = append(r.ints, v...)
	return r.ints[at:len(r.ints):len(r.ints)]
}

// bytes is strided.Bytes(0, n) with its shape and strides in the ints slab.
func (r *resolver) bytes(n int64) strided.Layout {
	at := len(r.ints)
	r.ints = append(r.ints, n, 1)
	return strided.Layout{Shape: r.ints[at : at+1 : at+1], Strides: r.ints[at+1 : at+2 : at+2], Elem: 1}
}

// dense is strided.Dense(0, shape, elem) with its shape and strides in the
// ints slab. checkStepLocal has checked an alloc's shape (elem > 0, no
// negative dimension, shape × elem = size > 0), so no stride can overflow;
// a shape it has not passed is left to strided.Dense and its errors.
func (r *resolver) dense(shape []int64, elem int64) (strided.Layout, error) {
	n := elem
	for _, d := range shape {
		var ok bool
		if n, ok = checked.Mul(n, d); !ok || d <= 0 || elem <= 0 {
			return strided.Dense(0, shape, elem)
		}
	}
	at := len(r.ints)
	r.ints = append(r.ints, shape...)
	r.ints = append(r.ints, shape...)
	k := len(shape)
	l := strided.Layout{Shape: r.ints[at : at+k : at+k], Strides: r.ints[at+k : at+2*k : at+2*k], Elem: elem}
	st := elem
	for j := k - 1; j >= 0; j-- {
		l.Strides[j] = st
		st *= shape[j]
	}
	return l, nil
}

func (r *resolver) engineOf(i int, s Step) (int, error) {
	if s.Engine == r.lastEngine && r.lastEngine != "" {
		return r.lastEngineIndex, nil
	}
	e, ok := r.p.engine[s.Engine]
	if !ok {
		return 0, stepErr(i, ErrUnknownName, "%s %q: engine %q", s.Kind, s.Name, s.Engine)
	}
	r.lastEngine, r.lastEngineIndex = s.Engine, e
	return e, nil
}

// live resolves a data name used by step i and fails if it was released or discarded.
func (r *resolver) live(i int, name string) (Ref, error) {
	ref, ok := r.p.data[name]
	if !ok {
		return Ref{}, stepErr(i, ErrUnknownName, "no buffer or view %q", name)
	}
	if r.released[ref.Buffer] {
		return Ref{}, stepErr(i, ErrUseAfterRelease, "%q: buffer %q was released",
			name, r.p.Buffers[ref.Buffer].Name)
	}
	for v := ref.View; v >= 0; v = r.p.Views[v].Parent {
		if d := r.p.Views[v].Discard; d >= 0 {
			return Ref{}, stepErr(i, ErrUseAfterRelease, "%q: view %q was discarded at step %d",
				name, r.p.Views[v].Name, d)
		}
	}
	return ref, nil
}

func (r *resolver) step(i int, s Step) error {
	p := r.p
	switch s.Kind {
	case KindAlloc, KindExternal:
		if _, dup := p.data[s.Name]; dup {
			return stepErr(i, ErrDuplicateName, "%q", s.Name)
		}
		if err := r.checkLive(i, s); err != nil {
			return err
		}
		b := Buffer{Name: s.Name, Step: i, Size: s.Size, External: s.Kind == KindExternal, Release: -1}
		shaped := false
		if s.Kind == KindAlloc {
			e, err := r.engineOf(i, s)
			if err != nil {
				return err
			}
			b.Engine = e
			if s.Shape != nil {
				l, err := r.dense(s.Shape, s.Elem)
				if err != nil {
					return layoutErr(i, s.Name, err)
				}
				b.Layout, shaped = l, true
			}
		}
		if !shaped {
			b.Layout = r.bytes(s.Size)
		}
		p.StepIndex[i] = len(p.Buffers)
		p.data[s.Name] = Ref{Buffer: len(p.Buffers), View: -1}
		p.Buffers = append(p.Buffers, b)
		r.released = append(r.released, false)
		r.discarded = append(r.discarded, ranges.Set{})
	case KindView:
		if _, dup := p.data[s.Name]; dup {
			return stepErr(i, ErrDuplicateName, "%q", s.Name)
		}
		parent, err := r.live(i, s.Of)
		if err != nil {
			return err
		}
		base := p.Layout(parent).Offset
		off, ok := checked.Add(base, s.Offset)
		if !ok {
			return stepErr(i, ErrOverflow, "view %q: offset %d + %d", s.Name, base, s.Offset)
		}
		l := strided.Layout{Offset: off, Shape: r.clone(s.Shape), Strides: r.clone(s.Strides), Elem: s.Elem}
		if err := l.Validate(p.Buffers[parent.Buffer].Size); err != nil {
			return layoutErr(i, s.Name, err)
		}
		p.StepIndex[i] = len(p.Views)
		p.data[s.Name] = Ref{Buffer: parent.Buffer, View: len(p.Views)}
		p.Views = append(p.Views, View{Name: s.Name, Step: i, Of: s.Of, Buffer: parent.Buffer,
			Parent: parent.View, Layout: l, Discard: -1})
	case KindOp:
		return r.op(i, s)
	case KindRelease:
		ref, err := r.live(i, s.Name)
		if err != nil {
			return err
		}
		b := &p.Buffers[ref.Buffer]
		if b.External {
			return stepErr(i, ErrExternal, "%q is (a view of) external buffer %q", s.Name, b.Name)
		}
		if ref.View < 0 {
			b.Release = i
			r.released[ref.Buffer] = true
			r.liveBytes -= r.granules(b.Size)
			p.StepIndex[i] = ref.Buffer
			return nil
		}
		p.Views[ref.View].Discard = i
		b.Discards = append(b.Discards, ref.View)
		if set, exact := p.Footprint(ref); exact {
			r.discarded[ref.Buffer].AddSet(&set)
		}
		p.StepIndex[i] = ref.View
	case KindSync:
		op, ok := p.ops[s.Name]
		if !ok {
			if r.isOp(s.Name) {
				return stepErr(i, ErrWaitOrder, "sync on %q", s.Name)
			}
			return stepErr(i, ErrUnknownName, "sync on %q: no such op", s.Name)
		}
		p.Syncs = append(p.Syncs, Sync{Step: i, Op: op})
		p.StepIndex[i] = op
	}
	return nil
}

func (r *resolver) op(i int, s Step) error {
	p := r.p
	if _, dup := p.ops[s.Name]; dup {
		return stepErr(i, ErrDuplicateName, "op %q", s.Name)
	}
	e, err := r.engineOf(i, s)
	if err != nil {
		return err
	}
	op := Op{Name: s.Name, Step: i, Engine: e, Cost: s.Cost, InPlace: s.InPlace}
	// The op's uses are the next stretch of the slab; a name used twice
	// leaves the stretch's tail unused.
	at := len(r.uses)
	op.Uses = r.uses[at:at:min(at+len(s.Reads)+len(s.Writes), cap(r.uses))]
	for _, w := range s.Waits {
		j, ok := p.ops[w]
		if !ok {
			if r.isOp(w) {
				return stepErr(i, ErrWaitOrder, "op %q waits on %q", s.Name, w)
			}
			return stepErr(i, ErrUnknownName, "op %q waits on %q: no such op", s.Name, w)
		}
		op.Waits = append(op.Waits, j)
	}
	// A name read or written twice is one use: found by a scan of the few uses of a
	// small op, through an index once an op has many (one op may read thousands).
	var index map[string]int
	add := func(name string, acc Access) error {
		ref, err := r.live(i, name)
		if err != nil {
			return err
		}
		if index == nil && len(op.Uses) >= 8 {
			index = make(map[string]int, len(s.Reads)+len(s.Writes))
			for k := range op.Uses {
				index[op.Uses[k].Name] = k
			}
		}
		if index != nil {
			if k, ok := index[name]; ok {
				op.Uses[k].Access |= acc
				return nil
			}
		} else {
			for k := range op.Uses {
				if op.Uses[k].Name == name {
					op.Uses[k].Access |= acc
					return nil
				}
			}
		}
		if d := &r.discarded[ref.Buffer]; !d.IsEmpty() {
			if set, exact := p.Footprint(ref); exact {
				if hit, ok := d.OverlapsSet(&set); ok {
					return stepErr(i, ErrUseAfterRelease, "op %q: %q covers discarded bytes %v",
						s.Name, name, hit)
				}
			}
		}
		if index != nil {
			index[name] = len(op.Uses)
		}
		op.Uses = append(op.Uses, Use{Ref: ref, Access: acc, Name: name})
		return nil
	}
	for _, n := range s.Reads {
		if err := add(n, AccessRead); err != nil {
			return err
		}
	}
	for _, n := range s.Writes {
		if err := add(n, AccessWrite); err != nil {
			return err
		}
	}
	r.uses = r.uses[:at+len(op.Uses)]
	if len(op.Uses) == 0 {
		op.Uses = nil
	} else {
		op.Uses = op.Uses[:len(op.Uses):len(op.Uses)]
	}
	p.StepIndex[i] = len(p.Ops)
	p.ops[s.Name] = len(p.Ops)
	p.Ops = append(p.Ops, op)
	return nil
}

// layoutErr maps a strided validation error onto this package's rules and sentinels.
func layoutErr(i int, name string, err error) error {
	switch {
	case errors.Is(err, strided.ErrOverflow):
		return stepErr(i, ErrOverflow, "%q: %v", name, err)
	case errors.Is(err, strided.ErrOutOfBounds):
		return stepErr(i, ErrOutOfBounds, "%q: %v", name, err)
	default:
		return stepErr(i, ErrShapeStrides, "%q: %v", name, err)
	}
}
