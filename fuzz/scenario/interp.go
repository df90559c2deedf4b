package scenario

import (
	"errors"
	"fmt"

	"github.com/subarena/subarena"
	"github.com/subarena/subarena/strided"
)

// Host carries out what a script's commands say: the Allocator (Run) or a builder of
// programs (package fuzz). Interpret reads the commands, keeps the names they give and
// resolves them to the Host's handles: B for buffers, V views, O ops, C claims and R
// reservations. A method's string is the command's output; its error is the
// command's failure, printed as "error: NAME", unless it is a script error
// (Invalidf), which stops the run.
type Host[B, V, O, C, R any] interface {
	// New starts afresh as a new command says; after an error, every command
	// but new is a script error until one succeeds.
	New(c Command) (string, error)
	// Check checks the Host's invariants, after every command once New has
	// succeeded.
	Check() error
	// Engine reports whether the engine name exists.
	Engine(name string) error
	Alloc(name string, size int64, engine string) (B, string, error)
	// Whole is b's whole view, which a buffer's name means where a view is
	// expected; each use builds a new one.
	Whole(b B) V
	Dense(b B, offset int64, shape []int64, elem int64) (V, error)
	// Derive builds the view step s makes of parent.
	Derive(parent V, s ViewStep) (V, error)
	// Layout is v's layout, which a chain's reshapes alternate with.
	Layout(v V) (strided.Layout, error)
	// Named reports view v, just named name.
	Named(name string, v V) (string, error)
	Submit(name, engine string, waits []O) (O, string, error)
	Use(op O, v V, acc subarena.Access) (string, error)
	Release(b B) (string, error)
	Discard(v V) (string, error)
	Complete(op O) (string, error)
	Sync(op O) (string, error)
	Donate(name string, v V, op O) (B, string, error)
	Claim(name string, v V) (C, string, error)
	Commit(c C, commit bool) (string, error)
	Reserve(name string, v V) (R, string, error)
	Activate(r R, op O, acc subarena.Access) (string, error)
	Cancel(r R) (string, error)
	State() (string, error)
}

// ViewStep is a view-building command decoded: Kind is the command (view, slice,
// select, reshape, permute or split; a chain is run as reshapes) and the other
// fields its arguments.
type ViewStep struct {
	Kind   string
	Layout strided.Layout // view: offset=, shape=, strides=, elem=
	Dim    int            // slice, select, split
	// Start, Stop and Step are a slice's; Index is a select's index and a
	// split's part.
	Start, Stop, Step, Index int64
	Shape                    []int64 // reshape; a split's sizes
	Perm                     []int   // permute
}

// Invalidf returns a script error, which stops Interpret with FILE:LINE and matches
// ErrInvalid: a Host's answer to a command it cannot carry out as written.
func Invalidf(format string, args ...any) error {
	return &scriptError{msg: fmt.Sprintf(format, args...)}
}

// scriptError is a mistake in the script (an unknown name), as opposed to a failure
// of a command.
type scriptError struct{ msg string }

func (e *scriptError) Error() string { return e.msg }

// Interpret runs the commands of f on h and returns each block's output, in order:
// what the command printed, or "error: NAME" naming the sentinel a failing call
// matched. After every command h's invariants are checked.
//
// The returned error is about the script, not h's answers: a name that was never
// defined, a command before the first successful "new", a Host's script error, or a
// broken invariant. It starts "FILE:LINE: " and matches ErrInvalid (a broken
// invariant also wraps Check's error); the outputs of the blocks before it are
// returned with it.
func Interpret[B, V, O, C, R any](f *File, h Host[B, V, O, C, R]) ([]string, error) {
	in := &interp[B, V, O, C, R]{h: h}
	outs := make([]string, 0, len(f.Blocks))
	for i := range f.Blocks {
		b := &f.Blocks[i]
		out, err := in.exec(b.Cmd)
		if err != nil {
			var se *scriptError
			if errors.As(err, &se) {
				return outs, f.Errorf(b, "%s: %s", b.Cmd.Name, se.msg)
			}
			out = "error: " + errName(err)
		}
		outs = append(outs, out)
		if in.started {
			if err := h.Check(); err != nil {
				return outs, errors.Join(f.Errorf(b, "after %q: invariant broken", b.Cmd.Text), err)
			}
		}
	}
	return outs, nil
}

// interp is Interpret's state: the Host, and the names the script gave.
type interp[B, V, O, C, R any] struct {
	h       Host[B, V, O, C, R]
	started bool // the last new succeeded
	bufs    map[string]B
	views   map[string]V
	ops     map[string]O
	claims  map[string]C
	resv    map[string]R
}

func (in *interp[B, V, O, C, R]) view(name string) (V, error) {
	if v, ok := in.views[name]; ok {
		return v, nil
	}
	if b, ok := in.bufs[name]; ok {
		return in.h.Whole(b), nil
	}
	var zero V
	return zero, Invalidf("unknown view %q", name)
}

func (in *interp[B, V, O, C, R]) buf(name string) (B, error) {
	if b, ok := in.bufs[name]; ok {
		return b, nil
	}
	var zero B
	return zero, Invalidf("unknown buffer %q", name)
}

func (in *interp[B, V, O, C, R]) op(name string) (O, error) {
	if o, ok := in.ops[name]; ok {
		return o, nil
	}
	var zero O
	return zero, Invalidf("unknown op %q", name)
}

// exec runs one command.
func (in *interp[B, V, O, C, R]) exec(c Command) (string, error) {
	h, a := in.h, c.Args
	if c.Name == "new" {
		in.started = false
		out, err := h.New(c)
		if err != nil {
			return "", err
		}
		in.started = true
		in.bufs, in.views, in.ops = map[string]B{}, map[string]V{}, map[string]O{}
		in.claims, in.resv = map[string]C{}, map[string]R{}
		return out, nil
	}
	if !in.started {
		return "", Invalidf("no allocator yet (the first command must be new)")
	}
	switch c.Name {
	case "alloc": // alloc BUF SIZE ENGINE
		if err := h.Engine(a[2]); err != nil {
			return "", err
		}
		return in.addBuf(a[0])(h.Alloc(a[0], c.Int(1), a[2]))
	case "dense": // dense V BUF shape= elem= [offset=]
		b, err := in.buf(a[1])
		if err != nil {
			return "", err
		}
		v, err := h.Dense(b, c.KeyInt("offset", 0), c.KeyInts("shape"), c.KeyInt("elem", 0))
		return in.addView(a[0], v, err)
	case "view", "slice", "select", "reshape", "permute", "split", "chain": // NAME OF ...
		parent, err := in.view(a[1])
		if err != nil {
			return "", err
		}
		v, err := in.derive(parent, c)
		return in.addView(a[0], v, err)
	case "submit": // submit OP ENGINE [waits=OP,...]
		if err := h.Engine(a[1]); err != nil {
			return "", err
		}
		var waits []O
		for _, name := range c.KeyList("waits") {
			o, err := in.op(name)
			if err != nil {
				return "", err
			}
			waits = append(waits, o)
		}
		o, out, err := h.Submit(a[0], a[1], waits)
		if err != nil {
			return "", err
		}
		in.ops[a[0]] = o
		return out, nil
	case "use": // use OP VIEW ACCESS
		o, err := in.op(a[0])
		if err != nil {
			return "", err
		}
		v, err := in.view(a[1])
		if err != nil {
			return "", err
		}
		return h.Use(o, v, Access(a[2]))
	case "release":
		b, err := in.buf(a[0])
		if err != nil {
			return "", err
		}
		return h.Release(b)
	case "discard":
		v, err := in.view(a[0])
		if err != nil {
			return "", err
		}
		return h.Discard(v)
	case "complete", "sync":
		o, err := in.op(a[0])
		if err != nil {
			return "", err
		}
		if c.Name == "sync" {
			return h.Sync(o)
		}
		return h.Complete(o)
	case "donate": // donate BUF VIEW OP
		v, err := in.view(a[1])
		if err != nil {
			return "", err
		}
		o, err := in.op(a[2])
		if err != nil {
			return "", err
		}
		return in.addBuf(a[0])(h.Donate(a[0], v, o))
	case "claim", "reserve": // NAME VIEW
		v, err := in.view(a[1])
		if err != nil {
			return "", err
		}
		if c.Name == "reserve" {
			r, out, err := h.Reserve(a[0], v)
			if err != nil {
				return "", err
			}
			in.resv[a[0]] = r
			return out, nil
		}
		cl, out, err := h.Claim(a[0], v)
		if err != nil {
			return "", err
		}
		in.claims[a[0]] = cl
		return out, nil
	case "commit", "abandon":
		cl, ok := in.claims[a[0]]
		if !ok {
			return "", Invalidf("unknown claim %q", a[0])
		}
		return h.Commit(cl, c.Name == "commit")
	case "activate", "cancel": // activate R OP [access=]; cancel R
		r, ok := in.resv[a[0]]
		if !ok {
			return "", Invalidf("unknown reservation %q", a[0])
		}
		if c.Name == "cancel" {
			return h.Cancel(r)
		}
		o, err := in.op(a[1])
		if err != nil {
			return "", err
		}
		acc, _ := c.Key("access")
		return h.Activate(r, o, Access(acc))
	case "state":
		return h.State()
	}
	return "", Invalidf("command %q is not implemented", c.Name)
}

// addBuf returns a function that names the buffer a command made (unless it
// failed) and passes its output on.
func (in *interp[B, V, O, C, R]) addBuf(name string) func(B, string, error) (string, error) {
	return func(b B, out string, err error) (string, error) {
		if err != nil {
			return "", err
		}
		in.bufs[name] = b
		return out, nil
	}
}

// addView names the view a command made, unless it failed with err.
func (in *interp[B, V, O, C, R]) addView(name string, v V, err error) (string, error) {
	if err != nil {
		return "", err
	}
	in.views[name] = v
	return in.h.Named(name, v)
}

// derive decodes a view-building command and builds its view of parent; a chain
// NAME OF DEPTH is DEPTH reshapes, alternately flat and back to OF's shape.
func (in *interp[B, V, O, C, R]) derive(parent V, c Command) (V, error) {
	s := ViewStep{Kind: c.Name}
	switch c.Name {
	case "view": // view NAME OF offset= shape= strides= elem=
		s.Layout = strided.Layout{Offset: c.KeyInt("offset", 0), Shape: c.KeyInts("shape"),
			Strides: c.KeyInts("strides"), Elem: c.KeyInt("elem", 0)}
	case "slice": // slice NAME OF dim start stop step
		s.Dim, s.Start, s.Stop, s.Step = int(c.Int(2)), c.Int(3), c.Int(4), c.Int(5)
	case "select": // select NAME OF dim index
		s.Dim, s.Index = int(c.Int(2)), c.Int(3)
	case "reshape":
		s.Shape = c.Ints(2)
	case "permute":
		for _, p := range c.Ints(2) {
			s.Perm = append(s.Perm, int(p))
		}
	case "split": // split NAME OF dim part sizes
		s.Dim, s.Index, s.Shape = int(c.Int(2)), c.Int(3), c.Ints(4)
	case "chain":
		return in.chain(parent, int(c.Int(2)))
	}
	return in.h.Derive(parent, s)
}

// chain builds depth reshapes of parent, alternately flat and back to its shape.
func (in *interp[B, V, O, C, R]) chain(parent V, depth int) (V, error) {
	l, err := in.h.Layout(parent)
	if err != nil {
		return parent, err
	}
	n, err := l.NumElems()
	if err != nil {
		return parent, err
	}
	v := parent
	for i := range depth {
		s := ViewStep{Kind: "reshape", Shape: l.Shape}
		if i%2 == 0 {
			s.Shape = []int64{n}
		}
		if v, err = in.h.Derive(v, s); err != nil {
			return v, err
		}
	}
	return v, nil
}
