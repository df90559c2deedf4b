package fuzz

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/subarena/subarena/fuzz/scenario"
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
// validated Program named scenario.SeedName(f.Name). The file must hold one
// program: exactly one "new", first, whose engines (in order) are the
// program's engines 0, 1, ... and whose capacity and granule it takes (the
// policy is ignored: a program runs under any policy).
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
	c := &fromScenario{f: f, engines: map[string]int{}, bufs: map[string]int{}, views: map[string]int{},
		ops: map[string]int{}, claims: map[string]int{}, resv: map[string]int{}, open: -1}
	for i := range f.Blocks {
		blk := &f.Blocks[i]
		if err := c.step(blk); err != nil {
			var se *scriptErr
			if errors.As(err, &se) {
				return nil, f.Errorf(blk, "%s: %s", blk.Cmd.Name, se.msg)
			}
			return nil, err
		}
	}
	if c.b == nil {
		return nil, f.Errorf(nil, "no new command")
	}
	c.flush()
	if len(c.claims) > 0 {
		names := slices.Sorted(maps.Keys(c.claims))
		return nil, f.Errorf(nil, "claim %q is never committed or abandoned", names[0])
	}
	p, err := c.b.Program()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", f.Errorf(nil, "not a valid program"), err)
	}
	return p, nil
}

type scriptErr struct{ msg string }

func (e *scriptErr) Error() string { return e.msg }

func bad(format string, args ...any) error { return &scriptErr{msg: fmt.Sprintf(format, args...)} }

// fromScenario is FromScenario's state: the Builder and the names it has
// given out.
type fromScenario struct {
	f       *scenario.File
	b       *Builder
	engines map[string]int
	bufs    map[string]int
	views   map[string]int
	ops     map[string]int
	claims  map[string]int // claim name -> view
	resv    map[string]int // reservation name -> index
	resView map[int]int    // reservation -> its view

	// The submit being gathered: its name, engine, waits and uses, or
	// open < 0 when none is.
	open     int
	openName string
	openEng  int
	openWait []int
	openUses []Use
}

// flush issues the gathered submit as one Submit step.
func (c *fromScenario) flush() {
	if c.open < 0 {
		return
	}
	c.ops[c.openName] = c.b.Op(c.openEng, c.openWait, c.openUses...)
	c.open, c.openName, c.openWait, c.openUses = -1, "", nil, nil
}

func (c *fromScenario) engine(name string) (int, error) {
	e, ok := c.engines[name]
	if !ok {
		return 0, bad("unknown engine %q", name)
	}
	return e, nil
}

func (c *fromScenario) buf(name string) (int, error) {
	b, ok := c.bufs[name]
	if !ok {
		return 0, bad("unknown buffer %q", name)
	}
	return b, nil
}

// view resolves a view name; a buffer's name builds a new whole view.
func (c *fromScenario) view(name string) (int, error) {
	if v, ok := c.views[name]; ok {
		return v, nil
	}
	if b, ok := c.bufs[name]; ok {
		return c.b.Whole(b), nil
	}
	return 0, bad("unknown view %q", name)
}

func (c *fromScenario) op(name string) (int, error) {
	o, ok := c.ops[name]
	if !ok {
		return 0, bad("unknown op %q (or not yet submitted)", name)
	}
	return o, nil
}

func (c *fromScenario) step(blk *scenario.Block) error {
	cmd := blk.Cmd
	if cmd.Name == "new" {
		return c.start(cmd)
	}
	if c.b == nil {
		return bad("no program yet (the first command must be new)")
	}
	// Lines that add to the open submit, or build views, do not close it.
	if inlineLines[cmd.Name] {
		return c.inline(cmd)
	}
	c.flush()
	return c.host(cmd)
}

// inlineLines are the commands inline takes.
var inlineLines = map[string]bool{"use": true, "activate": true, "dense": true, "slice": true, "select": true,
	"reshape": true, "permute": true, "split": true, "chain": true, "view": true, "complete": true, "state": true}

// start begins the program a new line describes.
func (c *fromScenario) start(cmd scenario.Command) error {
	if c.b != nil {
		return bad("a second new: a file is one program")
	}
	es := cmd.Engines()
	if len(es) > MaxEngines {
		return bad("%d engines, at most %d", len(es), MaxEngines)
	}
	for i, e := range es {
		if _, dup := c.engines[e.Name]; dup {
			return bad("engine %q twice", e.Name)
		}
		c.engines[e.Name] = i
	}
	c.b = NewBuilder(scenario.SeedName(c.f.Name), len(es), cmd.KeyInt("capacity", 1<<20), cmd.KeyInt("granule", 256))
	c.resView = map[int]int{}
	return nil
}

// inline takes a line that adds a use to the open submit or builds a view
// (inlineLines): such lines do not close the open submit.
func (c *fromScenario) inline(cmd scenario.Command) error {
	a := cmd.Args
	switch cmd.Name {
	case "use":
		if c.open < 0 || c.openName != a[0] {
			return bad("use of op %q not right after its submit", a[0])
		}
		v, err := c.view(a[1])
		if err != nil {
			return err
		}
		c.openUses = append(c.openUses, Use{View: v, Access: scenario.Access(a[2]), Res: -1})
		return nil
	case "activate":
		if c.open < 0 || c.openName != a[1] {
			return bad("activate for op %q not right after its submit", a[1])
		}
		r, ok := c.resv[a[0]]
		if !ok {
			return bad("unknown reservation %q", a[0])
		}
		acc, _ := cmd.Key("access")
		c.openUses = append(c.openUses, Reserved(Use{View: c.resView[r], Access: scenario.Access(acc)}, r))
		return nil
	case "dense":
		b, err := c.buf(a[1])
		if err != nil {
			return err
		}
		return c.named(a[0], c.b.Dense(b, cmd.KeyInt("offset", 0), cmd.KeyInts("shape"), cmd.KeyInt("elem", 0)))
	case "slice", "select", "reshape", "permute", "split", "chain":
		parent, err := c.view(a[1])
		if err != nil {
			return err
		}
		return c.named(a[0], c.derive(parent, cmd))
	case "view":
		return bad("a layout given outright has no fuzz equivalent (use dense and the view builders)")
	}
	return nil // complete and state: the campaign enumerates completions itself
}

// namedSteps are the host steps that take one buffer, view or op by name:
// lookup finds it, add adds the step for it.
var namedSteps = map[string]struct {
	lookup func(c *fromScenario, name string) (int, error)
	add    func(b *Builder, x int)
}{
	"release": {(*fromScenario).buf, func(b *Builder, buf int) { b.Release(buf) }},
	"discard": {(*fromScenario).view, (*Builder).Discard},
	"sync":    {(*fromScenario).op, (*Builder).HostSync},
}

// host takes a line that is a host step of its own, after the open submit
// is closed.
func (c *fromScenario) host(cmd scenario.Command) error {
	a := cmd.Args
	switch cmd.Name {
	case "alloc":
		e, err := c.engine(a[2])
		if err != nil {
			return err
		}
		c.bufs[a[0]] = c.b.Alloc(cmd.Int(1), e)
	case "submit":
		e, err := c.engine(a[1])
		if err != nil {
			return err
		}
		var waits []int
		for _, w := range cmd.KeyList("waits") {
			o, err := c.op(w)
			if err != nil {
				return err
			}
			waits = append(waits, o)
		}
		if _, dup := c.ops[a[0]]; dup {
			return bad("op %q submitted twice", a[0])
		}
		c.open, c.openName, c.openEng, c.openWait = len(c.b.p.Ops), a[0], e, waits
	case "release", "discard", "sync":
		st := namedSteps[cmd.Name]
		x, err := st.lookup(c, a[0])
		if err != nil {
			return err
		}
		st.add(c.b, x)
	case "donate":
		v, err := c.view(a[1])
		if err != nil {
			return err
		}
		o, err := c.op(a[2])
		if err != nil {
			return err
		}
		c.bufs[a[0]] = c.b.Donate(v, o)
	case "claim":
		v, err := c.view(a[1])
		if err != nil {
			return err
		}
		c.claims[a[0]] = v
	case "commit", "abandon":
		v, ok := c.claims[a[0]]
		if !ok {
			return bad("unknown claim %q", a[0])
		}
		delete(c.claims, a[0])
		c.b.Claim(v, cmd.Name == "commit")
	case "reserve":
		v, err := c.view(a[1])
		if err != nil {
			return err
		}
		r := c.b.Reserve(v)
		c.resv[a[0]], c.resView[r] = r, v
	case "cancel":
		r, ok := c.resv[a[0]]
		if !ok {
			return bad("unknown reservation %q", a[0])
		}
		c.b.Cancel(r)
	default:
		return bad("command %q is not a host step fuzz knows", cmd.Name)
	}
	return nil
}

// named records view v (or the Builder's error, v < 0) under name.
func (c *fromScenario) named(name string, v int) error {
	if v < 0 {
		return bad("%v", c.b.err)
	}
	c.views[name] = v
	return nil
}

// derive builds the view a view-building command makes of parent.
func (c *fromScenario) derive(parent int, cmd scenario.Command) int {
	switch cmd.Name {
	case "slice":
		return c.b.Slice(parent, int(cmd.Int(2)), cmd.Int(3), cmd.Int(4), cmd.Int(5))
	case "select":
		return c.b.Derive(parent, ViewOp{Kind: ViewSelect, Dim: int(cmd.Int(2)), Index: cmd.Int(3)})
	case "reshape":
		return c.b.Reshape(parent, cmd.Ints(2)...)
	case "permute":
		var perm []int
		for _, p := range cmd.Ints(2) {
			perm = append(perm, int(p))
		}
		return c.b.Permute(parent, perm...)
	case "split":
		return c.b.Split(parent, int(cmd.Int(2)), int(cmd.Int(3)), cmd.Ints(4)...)
	}
	// chain: DEPTH reshapes, alternately flat and back to the parent's shape.
	if parent < 0 || parent >= len(c.b.p.Views) {
		return -1
	}
	l := c.b.p.Views[parent].Layout
	n, err := l.NumElems()
	if err != nil {
		c.b.setErr(err)
		return -1
	}
	v := parent
	for i := 0; i < int(cmd.Int(2)) && v >= 0; i++ {
		if i%2 == 0 {
			v = c.b.Reshape(v, n)
		} else {
			v = c.b.Reshape(v, l.Shape...)
		}
	}
	return v
}
