package fuzz

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/fuzz/scenario"
	"github.com/subarena/subarena/strided"
)

// Scenario is a hand-written program from the design's regression set.
// Hazard says whether it contains a premature-reuse hazard: a reader that
// IR-order release lets a writer overtake, so the unsafe policy must be
// caught reading a wrong version in some interleaving. A scenario without
// one (serial work on one queue) must not be flagged under any policy.
type Scenario struct {
	Name    string
	Hazard  bool
	Program *Program
}

// Scenarios returns the seed scenarios, read from the scenario files of
// package fuzz/scenario (Seeds: fuzz/scenario/seeds/*.txt, embedded in
// that package): a view chain read on another engine, two branches through
// view chains, a Q/K/V split whose V a slow copy engine reads, a gate/up
// split, the members of a concat read on another engine, and serial reuse
// on one queue. A file's "#! hazard" directive sets Hazard; its name
// without the numeric prefix is the scenario's and the program's name.
func Scenarios() []Scenario {
	files, err := scenario.Seeds()
	if err != nil {
		panic("fuzz: seed scenarios: " + err.Error()) // the seeds are embedded, fixed data
	}
	out := make([]Scenario, 0, len(files))
	for _, f := range files {
		p, err := FromScenario(f)
		if err != nil {
			panic("fuzz: seed scenario: " + err.Error())
		}
		out = append(out, Scenario{Name: p.Name, Hazard: f.Hazard, Program: p})
	}
	return out
}

// FromScenario turns a scenario file (package fuzz/scenario) into a
// validated Program named scenario.SeedName(f.Name): the package's one
// interpreter (scenario.Interpret) reads the file, with a Builder as its
// Host. The file must hold one program: exactly one "new", first, whose
// engines (in order) are the program's engines 0, 1, ... and whose
// capacity and granule it takes (the policy is ignored: a program runs
// under any policy).
//
// The host steps map one to one: alloc, release, discard, sync (HostSync),
// donate, reserve and cancel; a submit with the use and activate lines right
// after it (views may be built in between) is one Submit step; a claim is
// one Claim step at its commit or abandon. complete and state lines are
// ignored: the simulator chooses the completion order itself. Views are
// built as the lines come — dense, slice, select, reshape, permute, split
// and chain (a chain of reshapes); a buffer's name used as a view builds a
// new whole view of it each time, as Builder.Whole does. A "view" (a
// layout given outright) has no Program equivalent and is refused.
//
// Errors say FILE:LINE and match scenario.ErrInvalid (a program that fails
// Validate matches ErrMalformed as well).
func FromScenario(f *scenario.File) (*Program, error) {
	h := &programHost{name: scenario.SeedName(f.Name), engines: map[string]int{}, opNames: map[int]string{},
		claims: map[string]bool{}, open: -1}
	outs, err := scenario.Interpret(f, h)
	if err != nil {
		return nil, err
	}
	for i, out := range outs { // a failure the interpreter printed: the views' arithmetic
		if msg, failed := strings.CutPrefix(out, "error: "); failed {
			return nil, f.Errorf(&f.Blocks[i], "%s: %s", f.Blocks[i].Cmd.Name, msg)
		}
	}
	if h.b == nil {
		return nil, f.Errorf(nil, "no new command")
	}
	h.flush()
	if len(h.claims) > 0 {
		names := slices.Sorted(maps.Keys(h.claims))
		return nil, f.Errorf(nil, "claim %q is never committed or abandoned", names[0])
	}
	p, err := h.b.Program()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", f.Errorf(nil, "not a valid program"), err)
	}
	return p, nil
}

// programHost is the scenario.Host FromScenario drives: a Builder, with
// buffers, views, ops and reservations as its indices. A submit stays open,
// gathering the use and activate lines after it, until the next host step.
type programHost struct {
	name      string
	b         *Builder
	engines   map[string]int
	opNames   map[int]string  // per op (submitted or open): its name
	claims    map[string]bool // the claims not yet committed or abandoned
	resView   map[int]int     // reservation -> its view
	submitted map[string]bool

	// The submit being gathered: its op, engine, waits and uses, or open < 0
	// when none is.
	open     int
	openEng  int
	openWait []int
	openUses []Use
}

var _ scenario.Host[int, int, int, scenarioClaim, int] = (*programHost)(nil)

// scenarioClaim is a claim of a scenario: its name and view.
type scenarioClaim struct {
	name string
	view int
}

// flush issues the gathered submit as one Submit step.
func (h *programHost) flush() {
	if h.open < 0 {
		return
	}
	h.b.Op(h.openEng, h.openWait, h.openUses...)
	h.open, h.openWait, h.openUses = -1, nil, nil
}

// named returns view v, or the Builder's error when it made none (v < 0).
func (h *programHost) named(v int) (int, error) {
	if v < 0 {
		return v, scenario.Invalidf("%v", h.b.err)
	}
	return v, nil
}

func (h *programHost) New(cmd scenario.Command) (string, error) {
	if h.b != nil {
		return "", scenario.Invalidf("a second new: a file is one program")
	}
	es := cmd.Engines()
	if len(es) > MaxEngines {
		return "", scenario.Invalidf("%d engines, at most %d", len(es), MaxEngines)
	}
	for i, e := range es {
		if _, dup := h.engines[e.Name]; dup {
			return "", scenario.Invalidf("engine %q twice", e.Name)
		}
		h.engines[e.Name] = i
	}
	h.b = NewBuilder(h.name, len(es), cmd.KeyInt("capacity", 1<<20), cmd.KeyInt("granule", 256))
	h.resView, h.submitted = map[int]int{}, map[string]bool{}
	return "", nil
}

func (h *programHost) Check() error { return nil }

func (h *programHost) Engine(name string) error {
	if _, ok := h.engines[name]; !ok {
		return scenario.Invalidf("unknown engine %q", name)
	}
	return nil
}

func (h *programHost) Alloc(_ string, size int64, engine string) (int, string, error) {
	h.flush()
	return h.b.Alloc(size, h.engines[engine]), "", nil
}

func (h *programHost) Whole(buf int) int { return h.b.Whole(buf) }

func (h *programHost) Dense(buf int, offset int64, shape []int64, elem int64) (int, error) {
	return h.named(h.b.Dense(buf, offset, shape, elem))
}

func (h *programHost) Derive(parent int, st scenario.ViewStep) (int, error) {
	switch st.Kind {
	case "slice":
		return h.named(h.b.Slice(parent, st.Dim, st.Start, st.Stop, st.Step))
	case "select":
		return h.named(h.b.Derive(parent, ViewOp{Kind: ViewSelect, Dim: st.Dim, Index: st.Index}))
	case "reshape":
		return h.named(h.b.Reshape(parent, st.Shape...))
	case "permute":
		return h.named(h.b.Permute(parent, st.Perm...))
	case "split":
		return h.named(h.b.Split(parent, st.Dim, int(st.Index), st.Shape...))
	}
	return -1, scenario.Invalidf("a layout given outright has no fuzz equivalent (use dense and the view builders)")
}

func (h *programHost) Layout(v int) (strided.Layout, error) {
	if v < 0 || v >= len(h.b.p.Views) {
		return strided.Layout{}, scenario.Invalidf("unknown view v%d", v)
	}
	return h.b.p.Views[v].Layout, nil
}

func (h *programHost) Named(string, int) (string, error) { return "", nil }

func (h *programHost) Submit(name, engine string, waits []int) (int, string, error) {
	h.flush()
	if h.submitted[name] {
		return -1, "", scenario.Invalidf("op %q submitted twice", name)
	}
	h.submitted[name] = true
	h.open, h.openEng, h.openWait = len(h.b.p.Ops), h.engines[engine], waits
	h.opNames[h.open] = name
	return h.open, "", nil
}

func (h *programHost) Use(op, v int, acc subarena.Access) (string, error) {
	if h.open < 0 || op != h.open {
		return "", scenario.Invalidf("use of op %q not right after its submit", h.opNames[op])
	}
	h.openUses = append(h.openUses, Use{View: v, Access: acc, Res: -1})
	return "", nil
}

func (h *programHost) Release(buf int) (string, error) {
	h.flush()
	h.b.Release(buf)
	return "", nil
}

func (h *programHost) Discard(v int) (string, error) {
	h.flush()
	h.b.Discard(v)
	return "", nil
}

// Complete is ignored: the simulator chooses the completion order itself.
func (h *programHost) Complete(int) (string, error) { return "", nil }

func (h *programHost) Sync(op int) (string, error) {
	h.flush()
	h.b.HostSync(op)
	return "", nil
}

func (h *programHost) Donate(_ string, v, op int) (int, string, error) {
	h.flush()
	return h.b.Donate(v, op), "", nil
}

func (h *programHost) Claim(name string, v int) (scenarioClaim, string, error) {
	h.flush()
	h.claims[name] = true
	return scenarioClaim{name: name, view: v}, "", nil
}

func (h *programHost) Commit(c scenarioClaim, commit bool) (string, error) {
	h.flush()
	if !h.claims[c.name] {
		return "", scenario.Invalidf("claim %q was committed or abandoned already", c.name)
	}
	delete(h.claims, c.name)
	h.b.Claim(c.view, commit)
	return "", nil
}

func (h *programHost) Reserve(_ string, v int) (int, string, error) {
	h.flush()
	r := h.b.Reserve(v)
	h.resView[r] = v
	return r, "", nil
}

func (h *programHost) Activate(r, op int, acc subarena.Access) (string, error) {
	if h.open < 0 || op != h.open {
		return "", scenario.Invalidf("activate for op %q not right after its submit", h.opNames[op])
	}
	h.openUses = append(h.openUses, Reserved(Use{View: h.resView[r], Access: acc}, r))
	return "", nil
}

func (h *programHost) Cancel(r int) (string, error) {
	h.flush()
	h.b.Cancel(r)
	return "", nil
}

// State is ignored, as complete is.
func (h *programHost) State() (string, error) { return "", nil }
