package fuzz

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/subarena/subarena"
	sasync "github.com/subarena/subarena/sync"
)

// MaxEngines is the most engines a program may use: the Timeline's limit.
const MaxEngines = sasync.MaxEngines

// ErrMalformed is wrapped by every error Program.Validate returns: the
// program refers to something that does not exist (yet, or any more), or it
// is racy, so some read would have no well-defined expected writer.
var ErrMalformed = errors.New("fuzz: malformed program")

// StepKind names a host step.
type StepKind uint8

// The host steps. Each is one call (or a few calls that a host makes
// together, such as Submit and the Uses of its views) into the Allocator or
// the Timeline.
const (
	StepAlloc    StepKind = iota + 1 // Buf = Alloc(Size, Point(Engine))
	StepSubmit                       // Op = Submit(Engine, Waits...); Use (or Activate) each of Uses
	StepRelease                      // Release(Buf)
	StepDiscard                      // Discard(View)
	StepHostSync                     // the host waits for Op to complete, then HostSync(Op)
	StepDonate                       // Buf = Donate(View, Op)
	StepClaim                        // Claim(View), then Commit or Abandon
	StepReserve                      // Res = Reserve(View)
	StepCancel                       // Res.Cancel()
)

var stepNames = [...]string{"", "alloc", "submit", "release", "discard", "hostsync", "donate", "claim", "reserve", "cancel"}

// String returns the step kind's name.
func (k StepKind) String() string {
	if int(k) < len(stepNames) && k != 0 {
		return stepNames[k]
	}
	return fmt.Sprintf("step(%d)", uint8(k))
}

// Use is one view an op reads, writes or both. Res >= 0 says the use was
// reserved (StepReserve) and is registered by activating that reservation.
type Use struct {
	View   int
	Access subarena.Access
	Res    int
}

// Step is one host step; the fields a kind does not use are zero.
type Step struct {
	Kind   StepKind
	Buf    int   // Alloc, Release, Donate (the new buffer)
	Size   int64 // Alloc
	Engine int   // Alloc: engine of the point; Submit: the op's engine
	Op     int   // Submit, HostSync, Donate
	Waits  []int // Submit: ops the op waits for
	Uses   []Use // Submit
	View   int   // Discard, Donate, Claim, Reserve
	Commit bool  // Claim: commit (else abandon) when the claim succeeds
	Res    int   // Reserve, Cancel
}

// BufDef is one buffer of a program: allocated (From = -1) or donated from
// the bytes of view From to op Op.
type BufDef struct {
	Size   int64
	Engine int // engine of the allocation point; -1 for a donated buffer
	From   int
	Op     int
}

// OpDef is one op: its engine and the index of its Submit step.
type OpDef struct {
	Engine int
	Step   int
}

// Program is a host program over one Allocator: buffers, views, ops on
// engines, and the order in which the host issues its steps. It is plain
// data: Run executes it, Validate checks it is well-formed, String prints
// it.
//
// A well-formed program is race-free: any two ops that touch a common byte
// of a buffer, one of them writing it, are ordered by happens-before (the
// same engine, a wait, a host sync, or a chain of these). Every read then
// has one expected writer: the last op before it that writes the byte.
// Donated buffers share their bytes' history with the buffer they came from.
//
// A Program must not change once it has been run: Run validates it once
// and remembers the verdict.
type Program struct {
	Name         string
	Engines      int
	Capacity     int64
	Granule      int64
	Bufs         []BufDef
	Views        []ViewDef
	Ops          []OpDef
	Reservations int
	Steps        []Step

	valid atomic.Bool // Validate succeeded
}

// String prints the program, one step a line.
func (p *Program) String() string {
	var sb strings.Builder
	name := p.Name
	if name == "" {
		name = "program"
	}
	fmt.Fprintf(&sb, "%s: %d engines, capacity %d, granule %d, %d ops, %d buffers, %d views\n",
		name, p.Engines, p.Capacity, p.Granule, len(p.Ops), len(p.Bufs), len(p.Views))
	used := map[int]bool{}
	for i := range p.Steps {
		s := &p.Steps[i]
		for _, v := range p.stepViews(s) {
			p.markChain(v, used)
		}
		fmt.Fprintf(&sb, "  %3d  %s\n", i, p.StepString(i))
	}
	if len(used) > 0 {
		sb.WriteString("  views:\n")
		for v := range p.Views {
			if used[v] {
				d := &p.Views[v]
				parent := fmt.Sprintf("b%d", d.Buf)
				if d.Parent >= 0 {
					parent = fmt.Sprintf("v%d", d.Parent)
				}
				fmt.Fprintf(&sb, "    v%d = %s.%v  %v  %d bytes\n", v, parent, d.Op, d.Layout, len(d.Bytes))
			}
		}
	}
	return sb.String()
}

func (p *Program) stepViews(s *Step) []int {
	switch s.Kind {
	case StepSubmit:
		vs := make([]int, len(s.Uses))
		for i, u := range s.Uses {
			vs[i] = u.View
		}
		return vs
	case StepDiscard, StepDonate, StepClaim, StepReserve:
		return []int{s.View}
	}
	return nil
}

func (p *Program) markChain(v int, used map[int]bool) {
	for v >= 0 && v < len(p.Views) && !used[v] {
		used[v] = true
		v = p.Views[v].Parent
	}
}

// viewBuf returns the buffer of view v, or -1 when there is no view v.
func (p *Program) viewBuf(v int) int {
	if v < 0 || v >= len(p.Views) {
		return -1
	}
	return p.Views[v].Buf
}

// StepString formats step i.
func (p *Program) StepString(i int) string {
	if i < 0 || i >= len(p.Steps) {
		return fmt.Sprintf("step %d?", i)
	}
	s := &p.Steps[i]
	switch s.Kind {
	case StepAlloc:
		return fmt.Sprintf("b%d = alloc %d @e%d", s.Buf, s.Size, s.Engine)
	case StepSubmit:
		var sb strings.Builder
		fmt.Fprintf(&sb, "o%d @e%d", s.Op, s.Engine)
		if len(s.Waits) > 0 {
			sb.WriteString(" wait[")
			for j, w := range s.Waits {
				if j > 0 {
					sb.WriteByte(' ')
				}
				fmt.Fprintf(&sb, "o%d", w)
			}
			sb.WriteByte(']')
		}
		for _, u := range s.Uses {
			acc := map[subarena.Access]string{subarena.Read: "r", subarena.Write: "w", subarena.ReadWrite: "rw"}[u.Access]
			fmt.Fprintf(&sb, " %s:v%d(b%d)", acc, u.View, p.viewBuf(u.View))
			if u.Res >= 0 {
				fmt.Fprintf(&sb, "/r%d", u.Res)
			}
		}
		return sb.String()
	case StepRelease:
		return fmt.Sprintf("release b%d", s.Buf)
	case StepDiscard:
		return fmt.Sprintf("discard v%d(b%d)", s.View, p.viewBuf(s.View))
	case StepHostSync:
		return fmt.Sprintf("hostsync o%d", s.Op)
	case StepDonate:
		return fmt.Sprintf("b%d = donate v%d(b%d) to o%d", s.Buf, s.View, p.viewBuf(s.View), s.Op)
	case StepClaim:
		what := "abandon"
		if s.Commit {
			what = "commit"
		}
		return fmt.Sprintf("claim v%d(b%d) %s", s.View, p.viewBuf(s.View), what)
	case StepReserve:
		return fmt.Sprintf("r%d = reserve v%d(b%d)", s.Res, s.View, p.viewBuf(s.View))
	case StepCancel:
		return fmt.Sprintf("cancel r%d", s.Res)
	}
	return s.Kind.String()
}

// vclock is a vector clock over a program's engines: c[e] is the last op
// (by per-engine sequence number, from 1) of engine e that happens-before
// or equals the op the clock belongs to. It is the program's own model of
// ordering, independent of package sync, which the simulator checks the
// Timeline against.
type vclock [MaxEngines]uint32

func (c *vclock) join(o *vclock) {
	for e := range c {
		c[e] = max(c[e], o[e])
	}
}

func (c *vclock) lessEq(o *vclock) bool {
	for e := range c {
		if c[e] > o[e] {
			return false
		}
	}
	return true
}

// lineage maps a buffer's bytes to the buffer whose history they share: a
// donated buffer's byte i is byte off+i of root.
type lineage struct {
	root int
	off  int64
}

// lineages returns each buffer's lineage.
func (p *Program) lineages() []lineage {
	out := make([]lineage, len(p.Bufs))
	for b := range p.Bufs {
		out[b] = lineage{root: b}
		if from := p.Bufs[b].From; from >= 0 && from < len(p.Views) {
			src := p.Views[from].Buf
			if src < b && len(p.Views[from].Bytes) > 0 {
				out[b] = lineage{root: out[src].root, off: out[src].off + int64(p.Views[from].Bytes[0])}
			}
		}
	}
	return out
}
