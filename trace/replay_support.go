package trace

import (
	"sort"

	"github.com/subarena/subarena/ranges"
	sasync "github.com/subarena/subarena/sync"
)

// opUse names one use: op index and index into its Uses.
type opUse struct{ op, use int }

// usesByBuffer lists, per buffer, the uses of it in op order.
func usesByBuffer(p *Program) [][]opUse {
	out := make([][]opUse, len(p.Buffers))
	for k := range p.Ops {
		for u, use := range p.Ops[k].Uses {
			out[use.Ref.Buffer] = append(out[use.Ref.Buffer], opUse{k, u})
		}
	}
	return out
}

// donation is a planned in-place placement: buffer placed by op over the bytes of the
// op's use read (an index into its Uses). op is -1 when the buffer is not donated to.
type donation struct{ op, read int }

// planDonations decides, per alloc buffer, whether replay donates to it (see Replay).
// A buffer is donated to only when every later op using it happens-after the donating
// op: bytes handed over in place carry the read view's users, and an op that could run
// alongside the donor (a racy read of its output) would share them unordered.
func planDonations(p *Program, usesOf [][]opUse, order *Order, off bool) []donation {
	out := make([]donation, len(p.Buffers))
	for i := range out {
		out[i] = donation{op: -1}
	}
	if off {
		return out
	}
	taken := map[opUse]bool{}
	for b := range p.Buffers {
		if p.Buffers[b].External || len(usesOf[b]) == 0 {
			continue
		}
		first := usesOf[b][0]
		op := &p.Ops[first.op]
		w := op.Uses[first.use]
		if !op.Inplace || w.Access&AccessWrite == 0 || discardedBefore(p, b, op.Step, nil) ||
			!laterUsesOrdered(usesOf[b], first.op, order) {
			continue
		}
		for u := range op.Uses {
			if u == first.use || taken[opUse{first.op, u}] || !donatable(p, usesOf, first.op, u, b, w.Ref, out) {
				continue
			}
			out[b] = donation{op: first.op, read: u}
			taken[opUse{first.op, u}] = true
			break
		}
	}
	return out
}

// laterUsesOrdered reports whether every use in uses by an op other than k is by an op
// that op k happens-before.
func laterUsesOrdered(uses []opUse, k int, order *Order) bool {
	for _, ou := range uses {
		if ou.op != k && !order.HappensBefore(k, ou.op) {
			return false
		}
	}
	return true
}

// donatable reports whether use u of op k (a read R of buffer a) may host buffer b,
// written by op k through ref w.
func donatable(p *Program, usesOf [][]opUse, k, u, b int, w Ref, planned []donation) bool {
	op := &p.Ops[k]
	use := op.Uses[u]
	a := use.Ref.Buffer
	A := &p.Buffers[a]
	if a == b || A.External || use.Access&AccessRead == 0 || A.Release < 0 || A.Release < op.Step ||
		planned[a].op == k {
		return false
	}
	l := p.Layout(use.Ref)
	if !l.IsDense() {
		return false
	}
	ext, err := l.Extent()
	if err != nil || ext.Len() != p.Buffers[b].Size || !sameElements(p, use.Ref, 0, w, ext.Lo) {
		return false
	}
	fp, exact := p.Footprint(use.Ref)
	if !exact || discardedBefore(p, a, op.Step, &fp) || !letsGoFirst(p, a, b, &fp, ext.Lo) {
		return false
	}
	for _, ou := range usesOf[a] {
		if ou.op < k || (ou.op == k && ou.use == u) {
			continue
		}
		other, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
		if _, hit := other.OverlapsSet(&fp); hit {
			return false // a later step (or another use of this op) still needs R's bytes
		}
	}
	return true
}

// letsGoFirst reports whether buffer a lets every byte of fp (a's bytes, B's byte y at
// a's byte lo+y) go strictly before buffer b lets the byte over it go. docs/TRACE.md's safety
// rule orders two buffers sharing a byte by which one lets it go first, where a discard
// of a view lets its bytes go while the buffer is held: the checker then requires every
// use through the first to happen-before every use through the second. R's users precede
// the donor op and B's users follow it, so a donation is safe only when R's buffer goes
// first for every byte it hands over, by its release or a discard, whichever comes first
// per byte: B discarding a view of them, or releasing them, before a does reverses the
// order, and bytes both hold to the end may not be shared at all.
func letsGoFirst(p *Program, a, b int, fp *ranges.Set, lo int64) bool {
	over := fp.Clone()
	_ = over.Translate(-lo)
	pbs := deathPieces(p, b, 0)
	for _, pa := range deathPieces(p, a, -lo) {
		x := ranges.Intersect(&over, &pa.set)
		if x.IsEmpty() {
			continue
		}
		for _, pb := range pbs {
			if _, hit := pb.set.OverlapsSet(&x); hit && (pa.death >= pb.death) {
				return false
			}
		}
	}
	return true
}

// discardedBefore reports whether a view of buffer b discarded before step overlaps set
// (any view, when set is nil).
func discardedBefore(p *Program, b, step int, set *ranges.Set) bool {
	for _, v := range p.Buffers[b].Discards {
		if p.Views[v].Discard >= step {
			continue
		}
		if set == nil {
			return true
		}
		fp, _ := p.Footprint(Ref{Buffer: b, View: v})
		if _, hit := fp.OverlapsSet(set); hit {
			return true
		}
	}
	return false
}

// completion is a simulated op end, ordered by time then event.
type completion struct {
	end int64
	ev  sasync.Event
}

func (c completion) less(o completion) bool {
	if c.end != o.end {
		return c.end < o.end
	}
	if c.ev.Engine != o.ev.Engine {
		return c.ev.Engine < o.ev.Engine
	}
	return c.ev.Seq < o.ev.Seq
}

// completionHeap is a binary min-heap of completions.
type completionHeap struct{ h []completion }

func (q *completionHeap) len() int        { return len(q.h) }
func (q *completionHeap) min() completion { return q.h[0] }

func (q *completionHeap) push(c completion) {
	q.h = append(q.h, c)
	for i := len(q.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.h[i].less(q.h[parent]) {
			break
		}
		q.h[i], q.h[parent] = q.h[parent], q.h[i]
		i = parent
	}
}

func (q *completionHeap) pop() completion {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q.h) && q.h[l].less(q.h[m]) {
			m = l
		}
		if r < len(q.h) && q.h[r].less(q.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}

// result assembles the ReplayResult after the last completion.
func (r *replayer) result() *ReplayResult {
	p := r.p
	st := r.alloc.Stats()
	res := &ReplayResult{Trace: p.Trace.Name, Policy: r.opts.Policy, HWM: st.HighWater, PendingPeak: r.pendPeak,
		Waited: r.countWaited(), Donated: r.nDonated, Buffers: p.NumAllocs(), Ops: len(p.Ops), Steps: r.steps,
		AllocatorTime: r.allocTimeSpent}
	res.Final = StepRecord{Step: len(p.Trace.Steps), InUse: st.InUse, Live: st.Live, Pending: st.Pending,
		HighWater: st.HighWater}
	for k := range p.Ops {
		res.Makespan = max(res.Makespan, r.end[k])
		res.Final.Time = max(res.Final.Time, r.end[k], r.host)
		res.OpTimes = append(res.OpTimes, OpRecord{Op: p.Ops[k].Name, Engine: p.Trace.Engines[p.Ops[k].Engine],
			Submit: r.submit[k], Start: r.start[k], End: r.end[k]})
	}
	res.LiveLB = LiveLowerBound(p, Schedule{Start: r.start, End: r.end, Makespan: res.Makespan})
	if res.LiveLB > 0 {
		res.Overhead = float64(res.HWM)/float64(res.LiveLB) - 1
	}
	res.Plan = &Plan{Trace: p.Trace.Name, Size: res.HWM, Offsets: make(map[string]int64, res.Buffers),
		Policy: r.opts.Policy.String(), LowerBound: res.LiveLB}
	for b := range p.Buffers {
		buf := &p.Buffers[b]
		if buf.External {
			continue
		}
		res.Plan.Offsets[buf.Name] = r.bufs[b].Offset()
		lt := BufferLifetime{Buffer: buf.Name, Offset: r.bufs[b].Offset(), Size: buf.Size, Alloc: r.allocTime[b],
			Donated: r.donated[b]}
		pieces := deathPieces(p, b, 0)
		spans := r.useSpans(b, pieces)
		for i, pc := range pieces {
			pl := PieceLifetime{Released: -1, FirstUse: spans[i].first, LastUse: spans[i].last}
			pl.Range = pc.set.Bounds()
			if pc.death != never {
				pl.Released = r.steps[pc.death].Time
			}
			lt.Pieces = append(lt.Pieces, pl)
		}
		res.Lifetimes = append(res.Lifetimes, lt)
	}
	return res
}

// useSpan is when the ops using a piece's bytes ran: the earliest start and the latest
// end, -1 both when no op used them.
type useSpan struct{ first, last int64 }

// useSpans returns, per piece of buffer b, the span of the ops whose uses of b meet it.
// Few pieces are met use by use; many are found through the runs of their partition, each
// use folding its start and end into the runs its footprint spans, in O((R + P) log P).
func (r *replayer) useSpans(b int, pieces []piece) []useSpan {
	p := r.p
	out := make([]useSpan, len(pieces))
	for i := range out {
		out[i] = useSpan{-1, -1}
	}
	merge := func(s *useSpan, start, end int64) {
		if s.first < 0 || start < s.first {
			s.first = start
		}
		s.last = max(s.last, end)
	}
	if len(pieces) <= paintAbove {
		for i := range pieces {
			for _, ou := range r.usesOf[b] {
				fp, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
				if _, hit := fp.OverlapsSet(&pieces[i].set); hit {
					merge(&out[i], r.start[ou.op], r.end[ou.op])
				}
			}
		}
		return out
	}
	part := partition(pieces)
	tags := newRangeTags(len(part), func(a, b useSpan) useSpan {
		return useSpan{min(a.first, b.first), max(a.last, b.last)}
	})
	for _, ou := range r.usesOf[b] {
		fp, _ := p.Footprint(p.Ops[ou.op].Uses[ou.use].Ref)
		for _, run := range fp.Runs() {
			lo := sort.Search(len(part), func(i int) bool { return part[i].r.Hi > run.Lo })
			hi := sort.Search(len(part), func(i int) bool { return part[i].r.Lo >= run.Hi })
			if lo < hi {
				tags.fold(lo, hi, useSpan{r.start[ou.op], r.end[ou.op]})
			}
		}
	}
	spans, used := tags.slots(len(part))
	for i, pr := range part {
		if used[i] {
			merge(&out[pr.piece], spans[i].first, spans[i].last)
		}
	}
	return out
}
