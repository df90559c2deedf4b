package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/subarena/subarena/ranges"
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

// Report is Check's answer.
type Report struct {
	Trace string `json:"trace"`
	Safe  bool   `json:"safe"`
	// Pairs counts the pairs of buffers the plan makes share bytes.
	Pairs      int         `json:"pairs"`
	Violations []Violation `json:"violations"`
}

// never is the death step of bytes held to the end of the trace.
const never = math.MaxInt

// placed is one alloc buffer as the checker sees it, in arena coordinates.
type placed struct {
	buf    int
	off    int64
	end    int64
	uses   []placedUse
	pieces []piece // the buffer's bytes partitioned by when the host lets them go
}

type placedUse struct {
	op  int
	use int // index in p.Ops[op].Uses
	set ranges.Set
}

type piece struct {
	set   ranges.Set
	death int // step index of the release or discard; never when held at the end
}

// Check decides whether plan is safe for p: for every byte x shared by two buffers A and
// B, where A lets x go first (by the step that releases A or discards a view covering x;
// bytes held to the end go last), every op using x through A (via any view chain) must
// happen-before every op using x through B. An op using x through both is allowed only
// when it is inplace and its two views put element i over element i. Bytes both buffers
// still hold at the end of the trace may not be shared at all. Bytes no op uses may be
// shared freely.
//
// A plan that does not fit p (CheckPlan) is an error matching ErrPlan; an unsafe plan is
// not an error: the Report lists every violation.
func Check(p *Program, plan *Plan) (*Report, error) {
	if err := CheckPlan(p, plan); err != nil {
		return nil, err
	}
	order, err := NewOrder(p)
	if err != nil {
		return nil, err
	}
	bufs := placeBuffers(p, plan)
	sort.Slice(bufs, func(i, j int) bool { return bufs[i].off < bufs[j].off })
	rep := &Report{Trace: p.Trace.Name}
	agg := map[violationKey]*Violation{}
	var keys []violationKey
	for i := range bufs {
		for j := i + 1; j < len(bufs) && bufs[j].off < bufs[i].end; j++ {
			rep.Pairs++
			checkPair(p, order, &bufs[i], &bufs[j], func(k violationKey, y *ranges.Set) {
				v, ok := agg[k]
				if !ok {
					v = newViolation(p, k)
					agg[k] = v
					keys = append(keys, k)
				}
				v.Bytes += y.Len()
				v.Ranges = append(v.Ranges, y.Runs()...)
			})
		}
	}
	for _, k := range keys {
		v := agg[k]
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
	return rep, nil
}

// violationKey identifies a violation: the rule and both (buffer, op, use) parties.
type violationKey struct {
	rule            string
	bufA, opA, useA int
	bufB, opB, useB int
}

func newViolation(p *Program, k violationKey) *Violation {
	party := func(buf, op, use int) Party {
		o := &p.Ops[op]
		u := o.Uses[use]
		return Party{Buffer: p.Buffers[buf].Name, Op: o.Name, Engine: p.Trace.Engines[o.Engine],
			Access: u.Access.String(), Chain: p.Chain(u.Ref)}
	}
	return &Violation{Rule: k.rule, Earlier: party(k.bufA, k.opA, k.useA), Later: party(k.bufB, k.opB, k.useB)}
}

// placeBuffers gathers, for every alloc buffer, its uses and death pieces in arena bytes.
func placeBuffers(p *Program, plan *Plan) []placed {
	index := make([]int, len(p.Buffers))
	var bufs []placed
	for i := range p.Buffers {
		b := &p.Buffers[i]
		index[i] = -1
		if b.External {
			continue
		}
		off := plan.Offsets[b.Name]
		index[i] = len(bufs)
		bufs = append(bufs, placed{buf: i, off: off, end: off + b.Size, pieces: deathPieces(p, i, off)})
	}
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			j := index[use.Ref.Buffer]
			if j < 0 {
				continue
			}
			fp, _ := p.Footprint(use.Ref)
			set, _ := translated(&fp, bufs[j].off) // CheckPlan bounded off+size: no overflow
			bufs[j].uses = append(bufs[j].uses, placedUse{op: k, use: u, set: set})
		}
	}
	return bufs
}

// deathPieces partitions buffer b's bytes (placed at off) by the step that lets them go:
// each discard takes the bytes of its view not discarded before; the rest go at the
// buffer's release, or never.
func deathPieces(p *Program, b int, off int64) []piece {
	buf := &p.Buffers[b]
	rest := ranges.FromRanges(ranges.Range{Lo: 0, Hi: buf.Size})
	var out []piece
	for _, v := range buf.Discards {
		fp, _ := p.Footprint(Ref{Buffer: b, View: v})
		got := ranges.Intersect(&rest, &fp)
		if got.IsEmpty() {
			continue
		}
		rest.RemoveSet(&got)
		_ = got.Translate(off)
		out = append(out, piece{set: got, death: p.Views[v].Discard})
	}
	if !rest.IsEmpty() {
		death := never
		if buf.Release >= 0 {
			death = buf.Release
		}
		_ = rest.Translate(off)
		out = append(out, piece{set: rest, death: death})
	}
	return out
}

// checkPair reports, through emit, every violation between two placed buffers.
func checkPair(p *Program, order *Order, a, b *placed, emit func(violationKey, *ranges.Set)) {
	shared := ranges.FromRanges(ranges.Range{Lo: max(a.off, b.off), Hi: min(a.end, b.end)})
	for _, ua := range a.uses {
		xa := ranges.Intersect(&ua.set, &shared)
		if xa.IsEmpty() {
			continue
		}
		for _, ub := range b.uses {
			x := ranges.Intersect(&xa, &ub.set)
			if x.IsEmpty() {
				continue
			}
			for _, pa := range a.pieces {
				xp := ranges.Intersect(&x, &pa.set)
				if xp.IsEmpty() {
					continue
				}
				for _, pb := range b.pieces {
					y := ranges.Intersect(&xp, &pb.set)
					if y.IsEmpty() {
						continue
					}
					first, second, fu, su := a, b, ua, ub
					if pb.death < pa.death || (pb.death == pa.death && p.Buffers[b.buf].Step < p.Buffers[a.buf].Step) {
						first, second, fu, su = b, a, ub, ua
					}
					rule := ""
					switch {
					case pa.death == never && pb.death == never:
						rule = ViolationHeld
					case fu.op == su.op:
						op := &p.Ops[fu.op]
						if !op.Inplace || !sameElements(p, op.Uses[fu.use].Ref, first.off, op.Uses[su.use].Ref, second.off) {
							rule = ViolationSameOp
						}
					case !order.HappensBefore(fu.op, su.op):
						rule = ViolationUnordered
					}
					if rule != "" {
						emit(violationKey{rule, first.buf, fu.op, fu.use, second.buf, su.op, su.use}, &y)
					}
				}
			}
		}
	}
}
