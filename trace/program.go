package trace

import (
	"fmt"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// CoverBudget is the number of runs up to which a view's covered bytes are computed
// exactly (strided.CoverBudget); a view that needs more is represented by a superset of
// its bytes, which makes the checker and the lower bound conservative, never unsound.
const CoverBudget = strided.CoverBudget

// Program is a validated Trace resolved to indices: every name bound to the buffer, view
// or op it denotes, every view's layout composed relative to its buffer, every op's uses
// merged per name. The checker (package trace/check), the replay (package trace/replay)
// and the planner (package trace/plan) work on a Program.
//
// A Program is read-only after Resolve, except for the footprint cache, which is filled
// on first use; it is not safe for concurrent use (Clone gives a Program for another
// goroutine).
type Program struct {
	Trace *Trace
	// Buffers are the alloc and external steps, in step order.
	Buffers []Buffer
	// Views are the view steps, in step order.
	Views []View
	// Ops are the op steps, in submission (step) order.
	Ops []Op
	// Syncs are the sync steps, in step order.
	Syncs []Sync
	// StepIndex maps a step to the index of what it introduces or targets: a buffer index
	// for alloc, external and buffer release steps; a view index for view and discard
	// steps; an op index for op and sync steps.
	StepIndex []int

	data   map[string]Ref
	ops    map[string]int
	engine map[string]int
	// coverWhole and coverView cache footprints per buffer and per view
	// (made on first use).
	coverWhole, coverView []footprint
	// uses and ints are the slabs Resolve cut the ops' uses and the
	// layouts' ints from, and released and discarded its per-buffer
	// state: kept for ResolveReusing.
	uses      []Use
	ints      []int64
	released  []bool
	discarded []ranges.Set
}

// Buffer is one alloc or external step.
type Buffer struct {
	Name string
	// Step is the index of the alloc or external step.
	Step int
	// Size in bytes, > 0.
	Size     int64
	External bool
	// Engine indexes Trace.Engines: the allocation point's engine (0 for externals).
	Engine int
	// Layout is the buffer's natural layout: dense over its shape and elem when the alloc
	// gives them, else one dimension of Size bytes.
	Layout strided.Layout
	// Release is the index of the step that releases the buffer, or -1 when it is held
	// to the end of the trace (always -1 for externals).
	Release int
	// Discards are the views of this buffer that the host discards, in step order.
	Discards []int
}

// View is one view step.
type View struct {
	Name string
	// Step is the index of the view step.
	Step int
	// Of is the name the view was taken of (a buffer or a view).
	Of string
	// Buffer is the index of the buffer the view reaches.
	Buffer int
	// Parent is the index of the view it was taken of, or -1 when taken of the buffer.
	Parent int
	// Layout is relative to the buffer's first byte: the parent chain's offsets summed.
	Layout strided.Layout
	// Discard is the index of the step that discards the view, or -1.
	Discard int
}

// Ref names the bytes an op uses: a whole buffer (View == -1) or one view of it.
type Ref struct {
	Buffer int
	View   int
}

// Access says how an op uses a Ref; it is sync.Access, the one definition
// the root package shares.
type Access = sasync.Access

// Accesses; a name in both reads and writes is an AccessReadWrite use.
const (
	AccessRead      Access = sasync.AccessRead
	AccessWrite     Access = sasync.AccessWrite
	AccessReadWrite Access = sasync.AccessReadWrite
)

// Use is one op using one Ref.
type Use struct {
	Ref    Ref
	Access Access
	// Name is the buffer or view name the op used.
	Name string
}

// Op is one op step.
type Op struct {
	Name string
	// Step is the index of the op step.
	Step int
	// Engine indexes Trace.Engines.
	Engine  int
	Cost    int64
	InPlace bool
	// Waits are indices of earlier ops.
	Waits []int
	// Uses are the op's reads and writes merged per name, in first-mention order (reads
	// first).
	Uses []Use
}

// Sync is one sync step: the host blocks until Op has completed.
type Sync struct {
	Step int
	Op   int
}

type footprint struct {
	set   ranges.Set
	exact bool
	ok    bool // computed
}

// Lookup returns the Ref a buffer or view name denotes.
func (p *Program) Lookup(name string) (Ref, bool) {
	r, ok := p.data[name]
	return r, ok
}

// OpIndex returns the index of the op with the given name.
func (p *Program) OpIndex(name string) (int, bool) {
	i, ok := p.ops[name]
	return i, ok
}

// EngineIndex returns the index in Trace.Engines of the engine with the given name.
func (p *Program) EngineIndex(name string) (int, bool) {
	i, ok := p.engine[name]
	return i, ok
}

// Layout returns the layout of r relative to its buffer's first byte.
func (p *Program) Layout(r Ref) strided.Layout {
	if r.View < 0 {
		return p.Buffers[r.Buffer].Layout
	}
	return p.Views[r.View].Layout
}

// Name returns the buffer or view name r denotes.
func (p *Program) Name(r Ref) string {
	if r.View < 0 {
		return p.Buffers[r.Buffer].Name
	}
	return p.Views[r.View].Name
}

// Chain returns the view chain of r: its own name, then the name of each view it was
// taken of, ending with its buffer's name.
func (p *Program) Chain(r Ref) []string {
	var chain []string
	for v := r.View; v >= 0; v = p.Views[v].Parent {
		chain = append(chain, p.Views[v].Name)
	}
	return append(chain, p.Buffers[r.Buffer].Name)
}

// Footprint returns the bytes r covers, relative to its buffer's first byte, and whether
// the set is exact; a view needing more than CoverBudget runs gets a superset (exact
// false). The set is cached and shared: callers must not modify it.
func (p *Program) Footprint(r Ref) (ranges.Set, bool) {
	// Resolve asks while the program grows: the caches keep up with it.
	if n := len(p.Buffers); len(p.coverWhole) < n {
		p.coverWhole = growZero(p.coverWhole, max(n, cap(p.Buffers)))
	}
	if n := len(p.Views); len(p.coverView) < n {
		p.coverView = growZero(p.coverView, max(n, cap(p.Views)))
	}
	slot := &p.coverWhole[r.Buffer]
	if r.View >= 0 {
		slot = &p.coverView[r.View]
	}
	if slot.ok {
		return slot.set, slot.exact
	}
	var f footprint
	if r.View < 0 {
		f = footprint{set: ranges.FromRanges(ranges.Range{Lo: 0, Hi: p.Buffers[r.Buffer].Size}), exact: true}
	} else {
		set, exact, err := p.Views[r.View].Layout.Cover(CoverBudget)
		if err != nil {
			// Resolve validated the layout, so Cover cannot fail; stay conservative anyway.
			set, exact = ranges.FromRanges(ranges.Range{Lo: 0, Hi: p.Buffers[r.Buffer].Size}), false
		}
		f = footprint{set: set, exact: exact}
	}
	f.ok = true
	*slot = f
	return f.set, f.exact
}

// growZero returns s lengthened to n, its new elements zero.
func growZero(s []footprint, n int) []footprint {
	if cap(s) >= n {
		m := len(s)
		s = s[:n]
		clear(s[m:])
		return s
	}
	return append(s, make([]footprint, n-len(s))...)
}

// Clone returns a Program for another goroutine: it shares p's read-only data and has a
// footprint cache of its own (the one thing Program changes once resolved), so p and the
// clone may be used at the same time. O(1).
func (p *Program) Clone() *Program {
	c := *p
	c.coverWhole, c.coverView = nil, nil
	c.uses, c.ints, c.released, c.discarded = nil, nil, nil, nil // never reused through a clone
	return &c
}

// NumAllocs returns the number of alloc (non-external) buffers: the buffers a plan places.
func (p *Program) NumAllocs() int {
	n := 0
	for i := range p.Buffers {
		if !p.Buffers[i].External {
			n++
		}
	}
	return n
}

// CheckInvariants verifies what Resolve promises of a Program: every name maps to the
// buffer, view or op of that name; StepIndex points at the entity each step introduces or
// targets; every view's buffer and parent precede it and its layout lies in its buffer;
// every op's uses name live entities and its waits are earlier ops; releases and discards
// come after what they release; cached footprints lie within their buffers.
func (p *Program) CheckInvariants() error {
	for _, check := range []func() error{p.checkNames, p.checkStepIndex, p.checkViews, p.checkOps, p.checkCovers} {
		if err := check(); err != nil {
			return fmt.Errorf("trace: program invariant: %w", err)
		}
	}
	return nil
}

// checkNames checks that every name maps to the buffer, view or op of
// that name.
func (p *Program) checkNames() error {
	if p.Trace == nil || len(p.StepIndex) != len(p.Trace.Steps) {
		return fmt.Errorf("StepIndex has %d entries for %d steps", len(p.StepIndex), len(p.Trace.Steps))
	}
	for name, r := range p.data {
		if r.Buffer < 0 || r.Buffer >= len(p.Buffers) || r.View >= len(p.Views) || p.Name(r) != name {
			return fmt.Errorf("data name %q maps to %+v", name, r)
		}
		if r.View >= 0 && p.Views[r.View].Buffer != r.Buffer {
			return fmt.Errorf("view %q is in buffer %d, its ref says %d", name, p.Views[r.View].Buffer, r.Buffer)
		}
	}
	if len(p.data) != len(p.Buffers)+len(p.Views) || len(p.ops) != len(p.Ops) {
		return fmt.Errorf("%d data names for %d buffers and %d views, %d op names for %d ops",
			len(p.data), len(p.Buffers), len(p.Views), len(p.ops), len(p.Ops))
	}
	return nil
}

// checkStepIndex checks that each step indexes the entity it introduces or
// targets.
func (p *Program) checkStepIndex() error {
	for i, s := range p.Trace.Steps {
		k := p.StepIndex[i]
		var name string
		switch s.Kind {
		case KindAlloc, KindExternal:
			name = p.Buffers[k].Name
		case KindView:
			name = p.Views[k].Name
		case KindOp, KindSync:
			name = p.Ops[k].Name
		case KindRelease:
			if r := p.data[s.Name]; r.View < 0 {
				name = p.Buffers[k].Name
			} else {
				name = p.Views[k].Name
			}
		}
		if name != s.Name {
			return fmt.Errorf("step %d (%s %q) indexes %q", i, s.Kind, s.Name, name)
		}
	}
	return nil
}

// checkViews checks views (after their buffer and parent, inside their
// buffer, discarded after they exist) and buffers' releases.
func (p *Program) checkViews() error {
	for i := range p.Views {
		v := &p.Views[i]
		b := &p.Buffers[v.Buffer]
		if b.Step >= v.Step || (v.Parent >= 0 && (v.Parent >= i || p.Views[v.Parent].Buffer != v.Buffer)) {
			return fmt.Errorf("view %q precedes its buffer or parent", v.Name)
		}
		if err := v.Layout.Validate(b.Size); err != nil {
			return fmt.Errorf("view %q: %v", v.Name, err)
		}
		if v.Discard >= 0 && v.Discard <= v.Step {
			return fmt.Errorf("view %q discarded at step %d, before it exists", v.Name, v.Discard)
		}
	}
	for i := range p.Buffers {
		if b := &p.Buffers[i]; b.Release >= 0 && (b.External || b.Release <= b.Step) {
			return fmt.Errorf("buffer %q released at step %d", b.Name, b.Release)
		}
	}
	return nil
}

// checkOps checks that ops wait on earlier ops and use live entities by
// their names.
func (p *Program) checkOps() error {
	for k := range p.Ops {
		op := &p.Ops[k]
		for _, w := range op.Waits {
			if w >= k {
				return fmt.Errorf("op %q waits on op %d, not earlier", op.Name, w)
			}
		}
		for _, u := range op.Uses {
			if r, ok := p.data[u.Name]; !ok || r != u.Ref || u.Access == 0 {
				return fmt.Errorf("op %q uses %q as %+v", op.Name, u.Name, u.Ref)
			}
			if rel := p.Buffers[u.Ref.Buffer].Release; rel >= 0 && rel < op.Step {
				return fmt.Errorf("op %q uses released buffer %q", op.Name, p.Buffers[u.Ref.Buffer].Name)
			}
		}
	}
	return nil
}

// checkCovers checks that cached footprints are well-formed sets within
// their buffers.
func (p *Program) checkCovers() error {
	check := func(r Ref, f *footprint) error {
		if !f.ok {
			return nil
		}
		if err := f.set.CheckInvariants(); err != nil {
			return fmt.Errorf("footprint of %q: %v", p.Name(r), err)
		}
		if b := f.set.Bounds(); !f.set.IsEmpty() && (b.Lo < 0 || b.Hi > p.Buffers[r.Buffer].Size) {
			return fmt.Errorf("footprint of %q is %v, outside [0, %d)", p.Name(r), b, p.Buffers[r.Buffer].Size)
		}
		return nil
	}
	for b := range min(len(p.coverWhole), len(p.Buffers)) {
		if err := check(Ref{Buffer: b, View: -1}, &p.coverWhole[b]); err != nil {
			return err
		}
	}
	for v := range min(len(p.coverView), len(p.Views)) {
		if err := check(Ref{Buffer: p.Views[v].Buffer, View: v}, &p.coverView[v]); err != nil {
			return err
		}
	}
	return nil
}

// OpUse names one use of an op: Op indexes Program.Ops, Use that op's Uses.
type OpUse struct{ Op, Use int }

// UsesByBuffer lists, per buffer, every use of it (through any of its views)
// in op order, the uses of one op in the order of its Uses. The lists are
// slices of one array, each capped at its own length.
func (p *Program) UsesByBuffer() [][]OpUse {
	out := make([][]OpUse, len(p.Buffers))
	count := make([]int, len(p.Buffers))
	nUses := 0
	for k := range p.Ops {
		for _, use := range p.Ops[k].Uses {
			count[use.Ref.Buffer]++
			nUses++
		}
	}
	all := make([]OpUse, nUses)
	at := 0
	for b, c := range count {
		out[b] = all[at : at : at+c]
		at += c
	}
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			out[use.Ref.Buffer] = append(out[use.Ref.Buffer], OpUse{k, u})
		}
	}
	return out
}
