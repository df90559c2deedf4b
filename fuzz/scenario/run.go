package scenario

import (
	"errors"
	"fmt"
	"github.com/subarena/subarena"
	"sort"
	"strings"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	sasync "github.com/subarena/subarena/sync"
)

// Run runs the commands of a scenario file against the
// Allocator and returns each block's output, in order: what the command printed, or
// "error: NAME" naming the sentinel a failing call matched. Every "new" command starts
// a fresh Allocator and Timeline; after every command the Allocator's invariants are
// checked.
//
// The returned error is about the script, not the Allocator's answers: a name that was
// never defined, a command before the first "new", or a broken invariant. It starts
// "FILE:LINE: " and matches ErrInvalid (a broken invariant also wraps
// CheckInvariants' error); the outputs of the blocks before it are returned with it.
func Run(f *File) ([]string, error) {
	s := &scenarioRun{file: f}
	outs := make([]string, 0, len(f.Blocks))
	for i := range f.Blocks {
		b := &f.Blocks[i]
		s.block = b
		out, err := s.exec(b.Cmd)
		if err != nil {
			var se *scriptError
			if errors.As(err, &se) {
				return outs, f.Errorf(b, "%s: %s", b.Cmd.Name, se.msg)
			}
			out = "error: " + errName(err)
		}
		outs = append(outs, out)
		if s.a != nil {
			if err := s.a.CheckInvariants(); err != nil {
				return outs, errors.Join(f.Errorf(b, "after %q: invariant broken", b.Cmd.Text), err)
			}
		}
	}
	return outs, nil
}

// scriptError is a mistake in the script (an unknown name), as opposed to an error the
// Allocator returns.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }

func scriptErrorf(format string, args ...any) error {
	return &scriptError{msg: fmt.Sprintf(format, args...)}
}

// scenarioRun is the interpreter's state: one Allocator, named buffers, views, ops,
// claims and reservations.
type scenarioRun struct {
	file   *File
	block  *Block
	tl     *sasync.Timeline
	a      *subarena.Allocator
	bufs   map[string]*subarena.Buffer
	views  map[string]*subarena.View
	ops    map[string]sasync.Event
	opName map[sasync.Event]string
	claims map[string]*subarena.Claim
	resv   map[string]*subarena.Reservation
}

// errName names the sentinel an error matches, so expected outputs do not depend on
// message wording.
func errName(err error) string {
	for _, e := range []struct {
		name string
		err  error
	}{
		{"ErrNoSpace", subarena.ErrNoSpace}, {"ErrReleased", subarena.ErrReleased}, {"ErrDoubleRelease", subarena.ErrDoubleRelease},
		{"ErrOutOfBounds", subarena.ErrOutOfBounds}, {"ErrInvalidLayout", subarena.ErrInvalidLayout}, {"ErrUnknownEvent", subarena.ErrUnknownEvent},
		{"ErrUnknownEngine", subarena.ErrUnknownEngine}, {"ErrPending", subarena.ErrPending}, {"ErrClaimed", subarena.ErrClaimed},
		{"ErrUnordered", subarena.ErrUnordered}, {"ErrNotDense", subarena.ErrNotDense}, {"ErrFinished", subarena.ErrFinished},
		{"ErrInvalidSize", subarena.ErrInvalidSize}, {"ErrAlreadyCompleted", sasync.ErrAlreadyCompleted},
		{"ErrInvalidConfig", subarena.ErrInvalidConfig}, {"ErrNotExpressible", strided.ErrNotExpressible}, {"ErrOverflow", strided.ErrOverflow},
	} {
		if errors.Is(err, e.err) {
			if e.err == subarena.ErrNoSpace {
				return e.name + " (" + err.Error() + ")"
			}
			return e.name
		}
	}
	return "unexpected " + err.Error()
}

func (s *scenarioRun) view(name string) (*subarena.View, error) {
	if v, ok := s.views[name]; ok {
		return v, nil
	}
	if b, ok := s.bufs[name]; ok {
		return b.Whole(), nil
	}
	return nil, scriptErrorf("unknown view %q", name)
}

func (s *scenarioRun) buf(name string) (*subarena.Buffer, error) {
	if b, ok := s.bufs[name]; ok {
		return b, nil
	}
	return nil, scriptErrorf("unknown buffer %q", name)
}

func (s *scenarioRun) op(name string) (sasync.Event, error) {
	ev, ok := s.ops[name]
	if !ok {
		return sasync.Event{}, scriptErrorf("unknown op %q", name)
	}
	return ev, nil
}

func (s *scenarioRun) engine(name string) (sasync.EngineID, error) {
	id, ok := s.tl.EngineByName(name)
	if !ok {
		return id, subarena.ErrUnknownEngine
	}
	return id, nil
}

func (s *scenarioRun) addView(name string, v *subarena.View, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s.views[name] = v
	l := v.Layout() // the covered bytes, in arena offsets, as the Allocator computes them
	l.Offset += v.Buffer().Offset()
	cover, _, err := l.Cover(subarena.CoverBudget)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s covers %s", name, runsString(&cover)), nil
}

func runsString(set *ranges.Set) string {
	rs := set.Runs()
	if len(rs) > 6 {
		return fmt.Sprintf("%d runs in %v, %d bytes", len(rs), set.Bounds(), set.Len())
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

// Access is the access an op's use word names in a script: "write",
// "read-write", or anything else (the grammar allows "read") a read.
func Access(word string) subarena.Access {
	switch word {
	case "write":
		return subarena.Write
	case "read-write":
		return subarena.ReadWrite
	}
	return subarena.Read
}

// scenarioCommands runs each command of a script but new, by name.
var scenarioCommands = map[string]func(s *scenarioRun, c Command) (string, error){
	"alloc": (*scenarioRun).alloc,
	"view":  (*scenarioRun).deriveView, "slice": (*scenarioRun).deriveView, "select": (*scenarioRun).deriveView,
	"reshape": (*scenarioRun).deriveView, "permute": (*scenarioRun).deriveView, "split": (*scenarioRun).deriveView,
	"chain":    (*scenarioRun).deriveView,
	"dense":    (*scenarioRun).dense,
	"submit":   (*scenarioRun).submit,
	"use":      (*scenarioRun).use,
	"release":  (*scenarioRun).release,
	"discard":  (*scenarioRun).discard,
	"complete": (*scenarioRun).complete, "sync": (*scenarioRun).complete,
	"donate": (*scenarioRun).donate,
	"claim":  (*scenarioRun).claimOrReserve, "reserve": (*scenarioRun).claimOrReserve,
	"commit": (*scenarioRun).commitOrAbandon, "abandon": (*scenarioRun).commitOrAbandon,
	"activate": (*scenarioRun).activateOrCancel, "cancel": (*scenarioRun).activateOrCancel,
	"state": func(s *scenarioRun, _ Command) (string, error) { return s.state(), nil },
}

func (s *scenarioRun) exec(c Command) (string, error) {
	if c.Name == "new" {
		return s.newAllocator(c)
	}
	if s.a == nil {
		return "", scriptErrorf("no allocator yet (the first command must be new)")
	}
	run, ok := scenarioCommands[c.Name]
	if !ok {
		return "", scriptErrorf("command %q is not implemented", c.Name)
	}
	return run(s, c)
}

// alloc NAME SIZE ENGINE
func (s *scenarioRun) alloc(c Command) (string, error) {
	pos := c.Args
	id, err := s.engine(pos[2])
	if err != nil {
		return "", err
	}
	pt, err := s.tl.Point(id)
	if err != nil {
		return "", err
	}
	b, err := s.a.Alloc(c.Int(1), pt)
	return s.addBuf(pos[0], b, err)
}

// addBuf names b, the buffer a command made (unless it failed with err),
// and reports where it lies.
func (s *scenarioRun) addBuf(name string, b *subarena.Buffer, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s.bufs[name] = b
	return fmt.Sprintf("%s at %v", name, b.Range()), nil
}

// view, slice, select, reshape, permute, split, chain: NAME OF ...
func (s *scenarioRun) deriveView(c Command) (string, error) {
	parent, err := s.view(c.Args[1])
	if err != nil {
		return "", err
	}
	v, err := derive(parent, c)
	return s.addView(c.Args[0], v, err)
}

// dense NAME BUF shape= elem= [offset=]
func (s *scenarioRun) dense(c Command) (string, error) {
	b, err := s.buf(c.Args[1])
	if err != nil {
		return "", err
	}
	v, err := b.Dense(c.KeyInt("offset", 0), c.KeyInts("shape"), c.KeyInt("elem", 0))
	return s.addView(c.Args[0], v, err)
}

// submit OP ENGINE waits=a,b
func (s *scenarioRun) submit(c Command) (string, error) {
	pos := c.Args
	id, err := s.engine(pos[1])
	if err != nil {
		return "", err
	}
	var waits []sasync.Event
	for _, o := range c.KeyList("waits") {
		ev, err := s.op(o)
		if err != nil {
			return "", err
		}
		waits = append(waits, ev)
	}
	ev, err := s.tl.Submit(id, waits...)
	if err != nil {
		return "", err
	}
	s.ops[pos[0]], s.opName[ev] = ev, pos[0]
	return fmt.Sprintf("%s = %v", pos[0], ev), nil
}

// use OP VIEW ACCESS
func (s *scenarioRun) use(c Command) (string, error) {
	ev, err := s.op(c.Args[0])
	if err != nil {
		return "", err
	}
	v, err := s.view(c.Args[1])
	if err != nil {
		return "", err
	}
	return "ok", s.a.Use(v, ev, Access(c.Args[2]))
}

// stateAfter returns the state a command leaves, or err when it failed.
func (s *scenarioRun) stateAfter(err error) (string, error) {
	if err != nil {
		return "", err
	}
	return s.state(), nil
}

// release BUF
func (s *scenarioRun) release(c Command) (string, error) {
	b, err := s.buf(c.Args[0])
	if err != nil {
		return "", err
	}
	return s.stateAfter(s.a.Release(b))
}

// discard VIEW
func (s *scenarioRun) discard(c Command) (string, error) {
	v, err := s.view(c.Args[0])
	if err != nil {
		return "", err
	}
	return s.stateAfter(s.a.Discard(v))
}

// complete OP; sync OP
func (s *scenarioRun) complete(c Command) (string, error) {
	ev, err := s.op(c.Args[0])
	if err != nil {
		return "", err
	}
	if c.Name == "sync" {
		return "ok", s.tl.HostSync(ev)
	}
	return s.stateAfter(s.tl.Complete(ev))
}

// donate NEW VIEW OP
func (s *scenarioRun) donate(c Command) (string, error) {
	pos := c.Args
	v, err := s.view(pos[1])
	if err != nil {
		return "", err
	}
	ev, err := s.op(pos[2])
	if err != nil {
		return "", err
	}
	b, err := s.a.Donate(v, ev)
	return s.addBuf(pos[0], b, err)
}

// claim NAME VIEW; reserve NAME VIEW
func (s *scenarioRun) claimOrReserve(c Command) (string, error) {
	v, err := s.view(c.Args[1])
	if err != nil {
		return "", err
	}
	if c.Name == "reserve" {
		r, err := s.a.Reserve(v)
		if err != nil {
			return "", err
		}
		s.resv[c.Args[0]] = r
		return "reserved", nil
	}
	cl, err := s.a.Claim(v)
	if err != nil {
		return "", err
	}
	s.claims[c.Args[0]] = cl
	return "claimed", nil
}

// commit NAME; abandon NAME
func (s *scenarioRun) commitOrAbandon(c Command) (string, error) {
	cl, ok := s.claims[c.Args[0]]
	if !ok {
		return "", scriptErrorf("unknown claim %q", c.Args[0])
	}
	if c.Name == "abandon" {
		return "ok", cl.Abandon()
	}
	return s.stateAfter(cl.Commit())
}

// activate NAME OP [access=]; cancel NAME
func (s *scenarioRun) activateOrCancel(c Command) (string, error) {
	r, ok := s.resv[c.Args[0]]
	if !ok {
		return "", scriptErrorf("unknown reservation %q", c.Args[0])
	}
	if c.Name == "cancel" {
		if err := r.Cancel(); err != nil {
			return "", err
		}
		return s.state(), nil
	}
	ev, err := s.op(c.Args[1])
	if err != nil {
		return "", err
	}
	acc, _ := c.Key("access")
	return "ok", r.Activate(ev, Access(acc))
}

func (s *scenarioRun) newAllocator(c Command) (string, error) {
	s.tl = sasync.NewTimeline()
	s.a = nil
	for _, e := range c.Engines() {
		k := sasync.Compute
		switch e.Kind {
		case "copy":
			k = sasync.Copy
		case "network":
			k = sasync.Network
		case "host":
			k = sasync.Host
		}
		if _, err := s.tl.AddEngine(e.Name, k); err != nil {
			return "", err
		}
	}
	var p subarena.Policy // the subarena.Config zero value, subarena.SubrangeFenced, unless the command names one
	if pol, ok := c.Key("policy"); ok {
		var err error
		if p, err = subarena.ParsePolicy(pol); err != nil {
			return "", err
		}
	}
	g, capacity := c.KeyInt("granule", 256), c.KeyInt("capacity", 1<<20)
	a, err := subarena.New(subarena.Config{Capacity: capacity, Granule: g, Policy: p, Timeline: s.tl})
	if err != nil {
		return "", err
	}
	s.a = a
	s.bufs, s.views = map[string]*subarena.Buffer{}, map[string]*subarena.View{}
	s.ops, s.opName = map[string]sasync.Event{}, map[sasync.Event]string{}
	s.claims, s.resv = map[string]*subarena.Claim{}, map[string]*subarena.Reservation{}
	return fmt.Sprintf("policy %v, capacity %d, granule %d", p, capacity, g), nil
}

// derive applies a view-building command to parent.
func derive(parent *subarena.View, c Command) (*subarena.View, error) {
	switch c.Name {
	case "view": // view NAME OF offset= shape= strides= elem=
		return parent.View(strided.Layout{Offset: c.KeyInt("offset", 0), Shape: c.KeyInts("shape"),
			Strides: c.KeyInts("strides"), Elem: c.KeyInt("elem", 0)})
	case "slice": // slice NAME OF dim start stop step
		return parent.Slice(int(c.Int(2)), c.Int(3), c.Int(4), c.Int(5))
	case "select": // select NAME OF dim index
		return parent.Select(int(c.Int(2)), c.Int(3))
	case "reshape":
		return parent.Reshape(c.Ints(2)...)
	case "permute":
		var perm []int
		for _, p := range c.Ints(2) {
			perm = append(perm, int(p))
		}
		return parent.Permute(perm...)
	case "split": // split NAME OF dim part sizes
		parts, err := parent.Split(int(c.Int(2)), c.Ints(4)...)
		if err != nil {
			return nil, err
		}
		if i := c.Int(3); i >= 0 && i < int64(len(parts)) {
			return parts[i], nil
		}
		return nil, fmt.Errorf("split part %d of %d: %w", c.Int(3), len(parts), subarena.ErrInvalidLayout)
	}
	// chain NAME OF DEPTH: alternate reshapes, ends at OF's shape
	v := parent
	shape := v.Layout().Shape
	n, err := v.Layout().NumElems()
	if err != nil {
		return nil, err
	}
	for i := 0; i < int(c.Int(2)); i++ {
		if i%2 == 0 {
			v, err = v.Reshape(n)
		} else {
			v, err = v.Reshape(shape...)
		}
		if err != nil {
			return nil, err
		}
	}
	return v, nil
}

// state prints what an engineer would look at: clean regions, held bytes, pending
// users' bytes (from the Allocator's Snapshot).
func (s *scenarioRun) state() string {
	snap := s.a.Snapshot()
	fs := ranges.FromRanges(snap.Free...)
	held := ranges.FromRanges(snap.Held...)
	var pend []string
	seen := map[string]bool{}
	for _, u := range snap.Pending {
		n := s.opName[u.Event]
		if u.Unknown {
			n = "?"
		}
		if !seen[n] {
			seen[n] = true
			pend = append(pend, n)
		}
	}
	sort.Strings(pend)
	return fmt.Sprintf("clean %s | held %s | pending %d bytes by [%s] | hwm %d",
		runsString(&fs), runsString(&held), snap.Stats.Pending, strings.Join(pend, " "), snap.Stats.HighWater)
}
