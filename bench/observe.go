package bench

import (
	"github.com/subarena/subarena/ranges"
	"github.com/subarena/subarena/trace"
)

// timeline is what the host of a replay knows, step by step: when each
// op was submitted, when the host observes its completion, and which ops
// use each buffer. replay.Run delivers a completion to the Allocator
// only when the host observes it — at a sync on that op or on an op it
// happens-before — or at the end of the trace; observed[k] is the step of
// that sync, or len(steps) when only the end observes it.
type timeline struct {
	p        *trace.Program
	observed []int
	usesOf   [][]bufUse // per buffer
}

// bufUse is one op using a buffer through one name.
type bufUse struct {
	op  int
	ref trace.Ref
}

func newTimeline(p *trace.Program) (*timeline, error) {
	order, err := trace.NewOrder(p)
	if err != nil {
		return nil, err
	}
	tl := &timeline{p: p, observed: make([]int, len(p.Ops)), usesOf: make([][]bufUse, len(p.Buffers))}
	for k := range tl.observed {
		tl.observed[k] = len(p.Trace.Steps)
	}
	// Ops not yet observed, in submission order; a sync observes a prefix
	// of nothing in particular, so scan them all (syncs are few).
	var open []int
	for i, s := range p.Trace.Steps {
		switch s.Kind {
		case trace.KindOp:
			open = append(open, p.StepIndex[i])
		case trace.KindSync:
			j := p.StepIndex[i]
			kept := open[:0]
			for _, k := range open {
				if k == j || order.HappensBefore(k, j) {
					tl.observed[k] = i
				} else {
					kept = append(kept, k)
				}
			}
			open = kept
		}
	}
	for k := range p.Ops {
		for _, u := range p.Ops[k].Uses {
			if !p.Buffers[u.Ref.Buffer].External {
				tl.usesOf[u.Ref.Buffer] = append(tl.usesOf[u.Ref.Buffer], bufUse{op: k, ref: u.Ref})
			}
		}
	}
	return tl, nil
}

// pendingAt reports whether op k has been submitted by step i and its
// completion is not yet observed after step i.
func (tl *timeline) pendingAt(k, i int) bool {
	return tl.p.Ops[k].Step <= i && tl.observed[k] > i
}

// usersDoneStep returns the first step after which every op using buffer
// b has been observed complete (-1 when no op uses it).
func (tl *timeline) usersDoneStep(b int) int {
	last := -1
	for _, u := range tl.usesOf[b] {
		last = max(last, tl.observed[u.op])
	}
	return last
}

// pendingCover returns the bytes of buffer b (buffer-relative) that ops
// pending after step i use.
func (tl *timeline) pendingCover(b, i int) ranges.Set {
	var s ranges.Set
	for _, u := range tl.usesOf[b] {
		if tl.pendingAt(u.op, i) {
			fp, _ := tl.p.Footprint(u.ref)
			s.AddSet(&fp)
		}
	}
	return s
}

// donationCut is an in-place hand-over: at step Step (its op), buffer Buf
// takes arena bytes [Lo, Hi) that buffer Donor held until then.
type donationCut struct {
	Buf, Donor int
	Step       int
	Lo, Hi     int64
}

// deferredBirths returns, for every buffer whose allocation replay defers
// to its first op (docs/TRACE.md, Replay: the op writes it in place and reads a
// dense, same-sized view of another buffer), the step of that op. Replay
// places such a buffer there, over the read bytes or, if the Allocator
// refuses, in new space.
func deferredBirths(p *trace.Program) map[int]int {
	births := map[int]int{}
	seen := make([]bool, len(p.Buffers))
	for k := range p.Ops {
		op := &p.Ops[k]
		for _, u := range op.Uses {
			b := u.Ref.Buffer
			if seen[b] {
				continue
			}
			seen[b] = true
			if !op.InPlace || p.Buffers[b].External || u.Access&trace.AccessWrite == 0 {
				continue
			}
			for _, r := range op.Uses {
				if r.Ref.Buffer == b || p.Buffers[r.Ref.Buffer].External || r.Access&trace.AccessRead == 0 {
					continue
				}
				fp, exact := p.Footprint(r.Ref)
				if exact && fp.NumRuns() == 1 && fp.Len() == p.Buffers[b].Size {
					births[b] = op.Step
					break
				}
			}
		}
	}
	return births
}

// firstUses returns, per buffer, the first op that uses it (through any
// view), or -1.
func firstUses(p *trace.Program) []int {
	first := make([]int, len(p.Buffers))
	for i := range first {
		first[i] = -1
	}
	for k := range p.Ops {
		for _, u := range p.Ops[k].Uses {
			if first[u.Ref.Buffer] < 0 {
				first[u.Ref.Buffer] = k
			}
		}
	}
	return first
}

// findDonations infers the donations of a placement: buffer b (with an
// offset of its own) is placed in place when the first op using it is
// inplace and reads a buffer still live at that op whose arena bytes (in
// frame f) cover all of b's. Replay defers such an allocation to that op
// (docs/TRACE.md, Replay), so b's bytes belong to the donor until then.
func findDonations(p *trace.Program, f *frame) map[int]donationCut {
	cuts := map[int]donationCut{}
	first := firstUses(p)
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		k := first[b]
		if buf.External || f.host[b] >= 0 || k < 0 || !p.Ops[k].InPlace {
			continue
		}
		r := ranges.Range{Lo: f.off[b], Hi: f.off[b] + buf.Size}
		step := p.Ops[k].Step
		for _, u := range p.Ops[k].Uses {
			d := u.Ref.Buffer
			db := &p.Buffers[d]
			if d == b || db.External || u.Access&trace.AccessRead == 0 || db.Step > step ||
				(db.Release >= 0 && db.Release < step) {
				continue
			}
			own := f.bytes(d)
			if donor := shift(&own, f.off[d]); donor.ContainsRange(r) {
				cuts[b] = donationCut{Buf: b, Donor: d, Step: step, Lo: r.Lo, Hi: r.Hi}
				break
			}
		}
	}
	return cuts
}
