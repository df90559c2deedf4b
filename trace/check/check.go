package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/strided"
	"github.com/subarena/subarena/trace"
)

// Violation rules.
const (
	// ViolationUnordered: an op using the bytes through the buffer that lets them go first
	// does not happen-before an op using them through the other.
	ViolationUnordered = "missing happens-before"
	// ViolationSameOp: one op uses the bytes through both buffers and is not an in-place
	// op putting element i over element i.
	ViolationSameOp = "same op through both buffers"
	// ViolationHeld: both buffers still hold the bytes at the end of the trace.
	ViolationHeld = "both held at end"
	// ViolationTakenOver: a buffer is placed over bytes that a buffer of its group used
	// before it and still holds at the end of the trace.
	ViolationTakenOver = "placed over bytes held at end"
)

// maxReportedRuns bounds the byte runs listed per violation; Bytes counts them all.
const maxReportedRuns = 8

// Party is one side of a violation: an op using shared bytes through one buffer.
type Party struct {
	Buffer string `json:"buffer"`
	Op     string `json:"op"`
	Engine string `json:"engine"`
	Access string `json:"access"`
	// Chain is the view chain through which the op reaches the bytes: the name it used,
	// each view that name was taken of, and the buffer.
	Chain []string `json:"chain"`
}

// Violation is one counterexample to a plan's safety: bytes shared by two buffers, the
// op using them through the buffer that lets them go first (Earlier), the op using them
// through the other (Later), and the happens-before edge Earlier.Op → Later.Op that is
// missing.
type Violation struct {
	Rule string `json:"rule"`
	// Ranges are arena byte runs [lo, hi) (at most 8 listed); Bytes counts them all.
	Ranges  []ranges.Range `json:"-"`
	Bytes   int64          `json:"bytes"`
	Earlier Party          `json:"earlier"`
	Later   Party          `json:"later"`
}

// MarshalJSON renders the violation with its byte runs as [lo, hi) pairs under "ranges"
// and the missing edge under "missing_edge".
func (v Violation) MarshalJSON() ([]byte, error) {
	type plain Violation
	runs := make([][2]int64, len(v.Ranges))
	for i, r := range v.Ranges {
		runs[i] = [2]int64{r.Lo, r.Hi}
	}
	return json.Marshal(struct {
		plain
		Ranges      [][2]int64 `json:"ranges"`
		MissingEdge string     `json:"missing_edge"`
	}{plain(v), runs, v.MissingEdge()})
}

// MissingEdge names the happens-before edge whose absence makes the plan unsafe.
func (v *Violation) MissingEdge() string { return v.Earlier.Op + " -> " + v.Later.Op }

// String describes the violation in one line.
func (v *Violation) String() string {
	var rs []string
	for _, r := range v.Ranges {
		rs = append(rs, r.String())
	}
	more := ""
	if len(rs) > 0 && v.Bytes > sumLen(v.Ranges) {
		more = " ..."
	}
	desc := fmt.Sprintf("bytes %s%s (%d B) of %q and %q: %s (%s) via %s must happen-before %s (%s) via %s",
		strings.Join(rs, " "), more, v.Bytes, v.Earlier.Buffer, v.Later.Buffer,
		v.Earlier.Op, v.Earlier.Engine, strings.Join(v.Earlier.Chain, " -> "),
		v.Later.Op, v.Later.Engine, strings.Join(v.Later.Chain, " -> "))
	switch v.Rule {
	case ViolationHeld:
		return desc + ": both buffers hold them at the end of the trace"
	case ViolationSameOp:
		return desc + ": the same op uses them through both buffers and is not in place element for element"
	case ViolationTakenOver:
		return desc + fmt.Sprintf(": %q is placed over them, which %q holds at the end of the trace",
			v.Later.Buffer, v.Earlier.Buffer)
	}
	return desc + ": missing edge " + v.MissingEdge()
}

func sumLen(rs []ranges.Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// Report is Plan's answer: whether the plan is safe and, when not, every violation.
type Report struct {
	Trace string `json:"trace"`
	Safe  bool   `json:"safe"`
	// Pairs counts the pairs of buffers the plan makes share bytes (a host and the
	// buffers placed over it count as one buffer against others; among themselves, each
	// pair whose footprints meet counts).
	Pairs      int         `json:"pairs"`
	Violations []Violation `json:"violations"`
}

// placed is one buffer with an offset, as the checker sees it in arena coordinates,
// together with the buffers placed over it (its group): the uses of all of them, and the
// group's bytes partitioned by when the host lets them go.
type placed struct {
	buf    int // the buffer with the offset: the group's host
	off    int64
	end    int64
	uses   []placedUse
	pieces []trace.Piece
}

// placedUse is one op's use of a buffer of a group, in arena coordinates.
type placedUse struct {
	op     int
	use    int // index in p.Ops[op].Uses
	buf    int // the buffer the op names (the host or one placed over it)
	set    ranges.Set
	layout strided.Layout
}

// checker carries what Plan needs and aggregates violations.
type checker struct {
	p     *trace.Program
	order *trace.Order
	frame *trace.Frame
	agg   map[violationKey]*found
	// onHost caches the footprint and layout in host coordinates of the refs of placed
	// buffers (each costs a Relayout and a Cover).
	onHost map[trace.Ref]hostRef
}

type hostRef struct {
	set    ranges.Set
	layout strided.Layout
}

// found is one violation being aggregated: its byte runs so far and the position at which
// the pairwise enumeration Plan's definition describes would first meet it (see enumPos).
type found struct {
	v  *Violation
	at enumPos
}

// enumPos orders violations by where the pairwise enumeration meets them first: placed
// buffers by offset (their position in Plan's sorted list), for each the pairs with the
// later ones and then its group, and within a pair the uses and pieces in order. Reports
// list violations in this order among those sorting equal by bytes and op names.
type enumPos [7]int

func (a enumPos) less(b enumPos) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Plan decides whether plan is safe for p: for every byte x shared by two buffers A and
// B, where A lets x go first (by the step that releases A or discards a view covering x;
// bytes held to the end go last), every op using x through A (via any view chain) must
// happen-before every op using x through B. An op using x through both is allowed only
// when it is inplace and its two views put element i over element i. Bytes both buffers
// still hold at the end of the trace may not be shared at all. Bytes no op uses may be
// shared freely.
//
// A buffer with a placement (trace.Plan.Placements) is checked as a view of its host laid out
// over the footprint: the host and the buffers placed over it form one group, whose bytes
// go at the discards of its views and at the last release of the group (never, if any of
// them is held to the end), and the rule above applies between groups. Within a group,
// each buffer takes its bytes over from the buffers that used them before it: ordering
// the host first and the others by their first op, every op using a byte through an
// earlier buffer must happen-before every op using it through a later one (with the same
// in-place exemption), and a byte an earlier buffer holds to the end may not be taken
// over at all.
//
// A plan that does not fit p (trace.CheckPlan) is an error matching trace.ErrPlan; an unsafe plan is
// not an error: the Report lists every violation.
//
// Plan does not visit pairs of buffers. It sweeps the pieces of all buffers in the order
// in which they let their bytes go, keeping the bytes each earlier use reached in an
// index by the use's engine and seq: a later use is unordered after an earlier one
// exactly when the earlier op's seq on its engine exceeds what the later op has seen of
// that engine, so the index reports only the uses in violation (see useIndex).
func Plan(p *trace.Program, plan *trace.Plan) (*Report, error) {
	c, err := newChecker(p, plan)
	if err != nil {
		return nil, err
	}
	bufs := c.placeBuffers(plan, c.groupPieces)
	sort.Slice(bufs, func(i, j int) bool { return bufs[i].off < bufs[j].off })
	rep := &Report{Trace: p.Trace.Name}
	for i := range bufs {
		// The buffers after i in offset order that start before i ends.
		rep.Pairs += sort.Search(len(bufs)-i-1, func(k int) bool { return bufs[i+1+k].off >= bufs[i].end })
	}
	c.sweep(bufs)
	for i := range bufs {
		if len(c.frame.Members(bufs[i].buf)) > 0 {
			rep.Pairs += c.checkGroup(i, &bufs[i])
		}
	}
	fs := make([]*found, 0, len(c.agg))
	for _, f := range c.agg {
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *found) int {
		switch {
		case a.at.less(b.at):
			return -1
		case b.at.less(a.at):
			return 1
		}
		return 0
	})
	vs := make([]*Violation, len(fs))
	for i, f := range fs {
		vs[i] = f.v
	}
	finishReport(rep, vs)
	return rep, nil
}

// finishReport appends vs to rep's violations, each with its byte runs merged, in order
// and cut to maxReportedRuns; orders the violations by their first byte, then by the
// Earlier op's name, then by the Later op's, keeping vs's order among equals; and marks
// rep safe when it has none.
func finishReport(rep *Report, vs []*Violation) {
	for _, v := range vs {
		set := ranges.FromRanges(v.Ranges...)
		v.Ranges = append([]ranges.Range(nil), set.Runs()...)
		if len(v.Ranges) > maxReportedRuns {
			v.Ranges = v.Ranges[:maxReportedRuns]
		}
		rep.Violations = append(rep.Violations, *v)
	}
	sort.SliceStable(rep.Violations, func(i, j int) bool {
		a, b := &rep.Violations[i], &rep.Violations[j]
		if a.Ranges[0].Lo != b.Ranges[0].Lo {
			return a.Ranges[0].Lo < b.Ranges[0].Lo
		}
		if a.Earlier.Op != b.Earlier.Op {
			return a.Earlier.Op < b.Earlier.Op
		}
		return a.Later.Op < b.Later.Op
	})
	rep.Safe = len(rep.Violations) == 0
}

// violationKey identifies a violation: the rule and both (buffer, op, use) parties.
type violationKey struct {
	rule            string
	bufA, opA, useA int
	bufB, opB, useB int
}

// sameOpRule returns the rule one op using shared bytes through two owners breaks ("" for
// none): it must be inplace and map the bytes element for element.
func (c *checker) sameOpRule(a, b *placedUse) string {
	if !c.p.Ops[a.op].InPlace || !sameMap(a.layout, b.layout) {
		return ViolationSameOp
	}
	return ""
}

// emit records bytes y of a violation between use a (the earlier party) and use b, met
// at position pos of the pairwise enumeration.
func (c *checker) emit(rule string, a, b *placedUse, y *ranges.Set, pos enumPos) {
	k := violationKey{rule, a.buf, a.op, a.use, b.buf, b.op, b.use}
	f, ok := c.agg[k]
	if !ok {
		f = &found{v: c.newViolation(k), at: pos}
		c.agg[k] = f
	} else if pos.less(f.at) {
		f.at = pos
	}
	f.v.Bytes += y.Len()
	f.v.Ranges = append(f.v.Ranges, y.Runs()...)
}

// newChecker prepares the check of plan on p: its frame (trace.CheckPlan; the groups of
// placed buffers are its Members) and the happens-before order.
func newChecker(p *trace.Program, plan *trace.Plan) (*checker, error) {
	frame, err := trace.NewFrame(p, plan)
	if err != nil {
		return nil, err
	}
	order, err := trace.NewOrder(p)
	if err != nil {
		return nil, err
	}
	return &checker{p: p, order: order, frame: frame, agg: map[violationKey]*found{}}, nil
}

// newViolation returns the violation k names, its parties spelled out.
func (c *checker) newViolation(k violationKey) *Violation {
	p := c.p
	party := func(buf, op, use int) Party {
		o := &p.Ops[op]
		u := o.Uses[use]
		chain := p.Chain(u.Ref)
		if h := c.frame.Host(buf); h >= 0 {
			chain = append(chain, p.Buffers[h].Name)
		}
		return Party{Buffer: p.Buffers[buf].Name, Op: o.Name, Engine: p.Trace.Engines[o.Engine],
			Access: u.Access.String(), Chain: chain}
	}
	return &Violation{Rule: k.rule, Earlier: party(k.bufA, k.opA, k.useA), Later: party(k.bufB, k.opB, k.useB)}
}

// placeBuffers gathers, for every buffer with an offset, the uses of its group and the
// group's death pieces in arena bytes, as pieces(host, offset) returns them.
func (c *checker) placeBuffers(plan *trace.Plan, pieces func(h int, off int64) []trace.Piece) []placed {
	p := c.p
	index := make([]int, len(p.Buffers))
	var bufs []placed
	for i := range p.Buffers {
		b := &p.Buffers[i]
		index[i] = -1
		if b.External || c.frame.Host(i) >= 0 {
			continue
		}
		off := plan.Offsets[b.Name]
		index[i] = len(bufs)
		bufs = append(bufs, placed{buf: i, off: off, end: off + b.Size, pieces: pieces(i, off)})
	}
	for i := range p.Buffers {
		if h := c.frame.Host(i); h >= 0 {
			index[i] = index[h]
		}
	}
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			j := index[use.Ref.Buffer]
			if j < 0 {
				continue
			}
			set, layout := c.arena(use.Ref, bufs[j].off)
			bufs[j].uses = append(bufs[j].uses, placedUse{op: k, use: u, buf: use.Ref.Buffer, set: set, layout: layout})
		}
	}
	return bufs
}

// arena returns the arena bytes and layout of r, whose group's host sits at off.
// trace.CheckPlan bounded off + size, so nothing overflows.
func (c *checker) arena(r trace.Ref, off int64) (ranges.Set, strided.Layout) {
	if c.frame.Host(r.Buffer) < 0 {
		fp, _ := c.p.Footprint(r)
		set, _ := translated(&fp, off)
		l := c.p.Layout(r)
		l.Offset += off
		return set, l
	}
	h, ok := c.onHost[r]
	if !ok {
		set, _ := c.frame.Footprint(r)
		h = hostRef{set: set, layout: c.frame.Layout(r)}
		if c.onHost == nil {
			c.onHost = map[trace.Ref]hostRef{}
		}
		c.onHost[r] = h
	}
	set, _ := translated(&h.set, off)
	l := h.layout.Clone()
	l.Offset += off
	return set, l
}

// translated returns a copy of s moved by d (s is not modified); on overflow it returns
// the copy unmoved and false.
func translated(s *ranges.Set, d int64) (ranges.Set, bool) {
	c := s.Clone()
	if err := c.Translate(d); err != nil {
		return c, false
	}
	return c, true
}
