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

// Run runs the commands of a scenario file against the Allocator (Interpret with the
// Allocator as its Host) and returns each block's output, in order: what the command
// printed, or "error: NAME" naming the sentinel a failing call matched. Every "new"
// command starts a fresh Allocator and Timeline; after every command the Allocator's
// invariants are checked.
//
// The returned error is about the script, not the Allocator's answers: a name that was
// never defined, a command before the first "new", or a broken invariant. It starts
// "FILE:LINE: " and matches ErrInvalid (a broken invariant also wraps
// CheckInvariants' error); the outputs of the blocks before it are returned with it.
func Run(f *File) ([]string, error) {
	return Interpret(f, &allocatorHost{})
}

// allocatorHost is the Host Run drives: one Allocator and its Timeline, and each op's
// name for the state it prints.
type allocatorHost struct {
	tl     *sasync.Timeline
	a      *subarena.Allocator
	opName map[sasync.Event]string
}

var _ Host[*subarena.Buffer, *subarena.View, sasync.Event, *subarena.Claim, *subarena.Reservation] = (*allocatorHost)(nil)

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

func (s *allocatorHost) engine(name string) (sasync.EngineID, error) {
	id, ok := s.tl.EngineByName(name)
	if !ok {
		return id, subarena.ErrUnknownEngine
	}
	return id, nil
}

func (s *allocatorHost) Engine(name string) error {
	_, err := s.engine(name)
	return err
}

func (s *allocatorHost) Check() error { return s.a.CheckInvariants() }

func (s *allocatorHost) Whole(b *subarena.Buffer) *subarena.View { return b.Whole() }

func (s *allocatorHost) Layout(v *subarena.View) (strided.Layout, error) { return v.Layout(), nil }

// Named reports the bytes v covers, in arena offsets, as the Allocator computes them.
func (s *allocatorHost) Named(name string, v *subarena.View) (string, error) {
	l := v.Layout()
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

// Alloc allocates at the point of engine.
func (s *allocatorHost) Alloc(name string, size int64, engine string) (*subarena.Buffer, string, error) {
	id, err := s.engine(engine)
	if err != nil {
		return nil, "", err
	}
	pt, err := s.tl.Point(id)
	if err != nil {
		return nil, "", err
	}
	return bufOut(name)(s.a.Alloc(size, pt))
}

// bufOut returns a function that reports where the buffer a command made lies, unless
// it failed.
func bufOut(name string) func(*subarena.Buffer, error) (*subarena.Buffer, string, error) {
	return func(b *subarena.Buffer, err error) (*subarena.Buffer, string, error) {
		if err != nil {
			return nil, "", err
		}
		return b, fmt.Sprintf("%s at %v", name, b.Range()), nil
	}
}

func (s *allocatorHost) Dense(b *subarena.Buffer, offset int64, shape []int64, elem int64) (*subarena.View, error) {
	return b.Dense(offset, shape, elem)
}

// Derive applies a view step to parent.
func (s *allocatorHost) Derive(parent *subarena.View, st ViewStep) (*subarena.View, error) {
	switch st.Kind {
	case "view":
		return parent.View(st.Layout)
	case "slice":
		return parent.Slice(st.Dim, st.Start, st.Stop, st.Step)
	case "select":
		return parent.Select(st.Dim, st.Index)
	case "reshape":
		return parent.Reshape(st.Shape...)
	case "permute":
		return parent.Permute(st.Perm...)
	case "split":
		parts, err := parent.Split(st.Dim, st.Shape...)
		if err != nil {
			return nil, err
		}
		if i := st.Index; i >= 0 && i < int64(len(parts)) {
			return parts[i], nil
		}
		return nil, fmt.Errorf("split part %d of %d: %w", st.Index, len(parts), subarena.ErrInvalidLayout)
	}
	return nil, Invalidf("view step %q is not implemented", st.Kind)
}

func (s *allocatorHost) Submit(name, engine string, waits []sasync.Event) (sasync.Event, string, error) {
	id, err := s.engine(engine)
	if err != nil {
		return sasync.Event{}, "", err
	}
	ev, err := s.tl.Submit(id, waits...)
	if err != nil {
		return sasync.Event{}, "", err
	}
	s.opName[ev] = name
	return ev, fmt.Sprintf("%s = %v", name, ev), nil
}

func (s *allocatorHost) Use(op sasync.Event, v *subarena.View, acc subarena.Access) (string, error) {
	return "ok", s.a.Use(v, op, acc)
}

// stateAfter returns the state a command leaves, or err when it failed.
func (s *allocatorHost) stateAfter(err error) (string, error) {
	if err != nil {
		return "", err
	}
	return s.State()
}

func (s *allocatorHost) Release(b *subarena.Buffer) (string, error) {
	return s.stateAfter(s.a.Release(b))
}

func (s *allocatorHost) Discard(v *subarena.View) (string, error) {
	return s.stateAfter(s.a.Discard(v))
}

func (s *allocatorHost) Complete(op sasync.Event) (string, error) {
	return s.stateAfter(s.tl.Complete(op))
}

func (s *allocatorHost) Sync(op sasync.Event) (string, error) { return "ok", s.tl.HostSync(op) }

func (s *allocatorHost) Donate(name string, v *subarena.View, op sasync.Event) (*subarena.Buffer, string, error) {
	return bufOut(name)(s.a.Donate(v, op))
}

func (s *allocatorHost) Claim(_ string, v *subarena.View) (*subarena.Claim, string, error) {
	cl, err := s.a.Claim(v)
	if err != nil {
		return nil, "", err
	}
	return cl, "claimed", nil
}

func (s *allocatorHost) Commit(cl *subarena.Claim, commit bool) (string, error) {
	if !commit {
		return "ok", cl.Abandon()
	}
	return s.stateAfter(cl.Commit())
}

func (s *allocatorHost) Reserve(_ string, v *subarena.View) (*subarena.Reservation, string, error) {
	r, err := s.a.Reserve(v)
	if err != nil {
		return nil, "", err
	}
	return r, "reserved", nil
}

func (s *allocatorHost) Activate(r *subarena.Reservation, op sasync.Event, acc subarena.Access) (string, error) {
	return "ok", r.Activate(op, acc)
}

func (s *allocatorHost) Cancel(r *subarena.Reservation) (string, error) {
	if err := r.Cancel(); err != nil {
		return "", err
	}
	return s.State()
}

// New starts a fresh Timeline and Allocator.
func (s *allocatorHost) New(c Command) (string, error) {
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
	s.opName = map[sasync.Event]string{}
	return fmt.Sprintf("policy %v, capacity %d, granule %d", p, capacity, g), nil
}

// state prints what an engineer would look at: clean regions, held bytes, pending
// users' bytes (from the Allocator's Snapshot).
func (s *allocatorHost) State() (string, error) {
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
		runsString(&fs), runsString(&held), snap.Stats.Pending, strings.Join(pend, " "), snap.Stats.HighWater), nil
}
