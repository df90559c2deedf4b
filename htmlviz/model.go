package htmlviz

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/subarena/subarena/trace/check"
)

// Schema is the value of Page.Schema: the version of the embedded JSON document.
const Schema = "subarena-viewer/v1"

// ErrPage is matched (errors.Is) by every error Validate and Write return for a page
// whose data is inconsistent: an index out of range, a piece outside the arena or the
// steps, a run without high-water marks for every step.
var ErrPage = errors.New("htmlviz: invalid page")

// Page is everything the viewer shows: the trace's names (buffers, views, ops,
// engines), shared by every run, and one or more runs of it laid out in the arena.
// Indices into Buffers, Views, Ops and Engines are positions in those slices.
type Page struct {
	// Schema is Schema; Write fills it in when empty.
	Schema string `json:"schema"`
	// Title heads the page and names the browser tab.
	Title string `json:"title"`
	// Trace is the trace's name.
	Trace string `json:"trace"`
	// Granule is the trace's granule in bytes.
	Granule int64 `json:"granule"`
	// Steps is the number of host steps: the time axis runs over [0, Steps].
	Steps   int      `json:"steps"`
	Engines []string `json:"engines"`
	Buffers []Buffer `json:"buffers"`
	Views   []View   `json:"views"`
	Ops     []Op     `json:"ops"`
	// Runs are drawn one above the other on one time axis (two when comparing).
	Runs []Run `json:"runs"`
}

// Buffer is one buffer of the trace.
type Buffer struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// External marks a buffer that lives outside the arena (it has no pieces).
	External bool `json:"external,omitempty"`
	// Step is the alloc step; Release the step that releases it, -1 when held to the end.
	Step    int `json:"step"`
	Release int `json:"release"`
}

// View is one view of the trace.
type View struct {
	Name string `json:"name"`
	// Buffer is the buffer the view reaches; Parent the view it was taken of, -1 when
	// taken of the buffer itself.
	Buffer int `json:"buffer"`
	Parent int `json:"parent"`
	// Step is the view step; Discard the step that discards its bytes, -1 for none.
	Step    int `json:"step"`
	Discard int `json:"discard"`
}

// Op is one op of the trace.
type Op struct {
	Name   string `json:"name"`
	Engine int    `json:"engine"`
	// Seq is the op's place on its engine, from 1: its event is Engines[Engine]#Seq.
	Seq int `json:"seq"`
	// Step is the op step; Done the step after which the host has seen it complete (a
	// sync on it or on an op it happens-before), Steps when only the end of the trace
	// shows it.
	Step int `json:"step"`
	Done int `json:"done"`
	// Start and End are the simulated times it ran over (cost units), -1 when unknown.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Run is one layout of the trace in the arena: a replay under a policy or a plan.
type Run struct {
	// Label names the run in its panel ("subrange-fenced", "plan p.json ...").
	Label string `json:"label"`
	// Kind is "replay" or "plan".
	Kind string `json:"kind"`
	// HWM is the arena size the run needs; LiveLB the lower bound of the schedule (0:
	// unknown), which holds for layouts that give every buffer an offset
	// (check.LiveLowerBound): a plan with Relaid buffers, each laid over a strided
	// footprint of another, may be below it, and the page then says so instead of a
	// negative overhead.
	HWM    int64 `json:"hwm"`
	LiveLB int64 `json:"livelb"`
	// Relaid counts the run's buffers laid over a strided footprint of another
	// (trace.Plan.Placements); 0 for replays.
	Relaid int `json:"relaid"`
	// HighWater[i] is the high-water mark after step i: one entry per step.
	HighWater []int64 `json:"highWater"`
	Pieces    []Piece `json:"pieces"`
	// Checked says whether the checker ran on the run; Violations is what it found.
	Checked    bool        `json:"checked"`
	Violations []Violation `json:"violations"`
}

// Piece is one rectangle of a run: arena bytes [Lo, Hi) of a buffer over host steps
// [From, To).
type Piece struct {
	Buffer   int
	Lo, Hi   int64
	From, To int
	// Pending marks bytes the program has let go whose users are not yet seen complete
	// (drawn hatched); Users are then those pending users.
	Pending bool
	// Holder is the view whose discard lets the bytes go, -1 when the buffer's release
	// does (or the buffer is held to the end).
	Holder int
	// Host is the buffer this one is laid over (a plan's placement), -1 for none.
	Host int
	// Users are the ops using these bytes (every one, over the buffer's life, for a live
	// piece; the pending ones for a pending piece).
	Users []Use
}

// Use is one op using a piece's bytes through a name: View -1 is the buffer itself.
type Use struct {
	Op, View int
	// Access is "read", "write" or "read-write".
	Access string
}

var accessCodes = map[string]int{"read": 1, "write": 2, "read-write": 3}

// MarshalJSON writes a piece as the array
// [buffer, lo, hi, from, to, flags, holder, host, users] with flags 1 for pending and
// users flattened as op, view, access (1 read, 2 write, 3 read-write) triples.
func (pc Piece) MarshalJSON() ([]byte, error) {
	flags := 0
	if pc.Pending {
		flags = 1
	}
	users := make([]int, 0, 3*len(pc.Users))
	for _, u := range pc.Users {
		users = append(users, u.Op, u.View, accessCodes[u.Access])
	}
	return json.Marshal([]any{pc.Buffer, pc.Lo, pc.Hi, pc.From, pc.To, flags, pc.Holder, pc.Host, users})
}

// Violation is one counterexample the checker found to the run's safety, in the shape
// `subarena check --json` prints, with the steps of its two ops.
type Violation struct {
	Rule string `json:"rule"`
	// Ranges are the arena bytes both buffers reach ([lo, hi) runs, the first few);
	// Bytes counts them all.
	Ranges [][2]int64 `json:"ranges"`
	Bytes  int64      `json:"bytes"`
	// Earlier uses the bytes through the buffer that lets them go first (the reader of
	// a premature reuse), Later through the other (the writer).
	Earlier Party `json:"earlier"`
	Later   Party `json:"later"`
	// MissingEdge is the happens-before edge "earlier op -> later op" that is missing.
	MissingEdge string `json:"missing_edge"`
	// From and To are the steps of Earlier's and Later's ops (-1 when unknown).
	From int `json:"from"`
	To   int `json:"to"`
}

// Party is one side of a violation, exactly as the checker reports it and
// `subarena check --json` prints it: the buffer, the op, its engine, its access and
// the view chain through which it reaches the bytes.
type Party = check.Party

// Validate reports the first inconsistency in the page, as an error matching ErrPage.
func (p *Page) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrPage}, args...)...)
	}
	if p.Schema != "" && p.Schema != Schema {
		return bad("schema %q, want %q", p.Schema, Schema)
	}
	if p.Steps < 0 {
		return bad("%d steps", p.Steps)
	}
	if len(p.Runs) == 0 {
		return bad("no runs")
	}
	for i, v := range p.Views {
		if v.Buffer < 0 || v.Buffer >= len(p.Buffers) || v.Parent < -1 || v.Parent >= i {
			return bad("view %d (%q): buffer %d, parent %d", i, v.Name, v.Buffer, v.Parent)
		}
	}
	for i, op := range p.Ops {
		if op.Engine < 0 || op.Engine >= len(p.Engines) {
			return bad("op %d (%q): engine %d of %d", i, op.Name, op.Engine, len(p.Engines))
		}
	}
	for r, run := range p.Runs {
		if run.Kind != "replay" && run.Kind != "plan" {
			return bad("run %d (%q): kind %q, want replay or plan", r, run.Label, run.Kind)
		}
		if len(run.HighWater) != p.Steps {
			return bad("run %d (%q): %d high-water marks for %d steps", r, run.Label, len(run.HighWater), p.Steps)
		}
		for i, pc := range run.Pieces {
			if pc.Buffer < 0 || pc.Buffer >= len(p.Buffers) || pc.Host < -1 || pc.Host >= len(p.Buffers) ||
				pc.Holder < -1 || pc.Holder >= len(p.Views) {
				return bad("run %d piece %d: buffer %d, host %d, holder %d", r, i, pc.Buffer, pc.Host, pc.Holder)
			}
			if pc.Lo < 0 || pc.Hi <= pc.Lo || pc.Hi > run.HWM || pc.From < 0 || pc.To < pc.From || pc.To > p.Steps {
				return bad("run %d piece %d of %q: bytes [%d, %d) steps [%d, %d) outside [0, %d) × [0, %d]", r, i,
					p.Buffers[pc.Buffer].Name, pc.Lo, pc.Hi, pc.From, pc.To, run.HWM, p.Steps)
			}
			for _, u := range pc.Users {
				if u.Op < 0 || u.Op >= len(p.Ops) || u.View < -1 || u.View >= len(p.Views) || accessCodes[u.Access] == 0 {
					return bad("run %d piece %d: use %+v", r, i, u)
				}
			}
		}
	}
	return nil
}
